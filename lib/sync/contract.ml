exception Cancelled = Braid.Cancelled

let suspend = Braid.suspend
let self_id = Braid.Fiber.self_id
let protect = Braid.Fiber.protect
