type 'a resumer = 'a Suspend.resumer
type _ Effect.t += Suspend = Suspend.Suspend

let suspend = Suspend.suspend

exception Cancelled = Suspend.Cancelled

module Fiber = struct
  include Fiber

  let fork ?sw f =
    match sw with None -> Fiber.fork f | Some sw -> Switch.fork sw f
end

module Switch = Switch

module Private = struct
  module Fiber = Fiber.Private
  module Scheduler = Scheduler
  module Task_queue = Task_queue
end
