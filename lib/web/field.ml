type 'a t = { key : 'a Braid.Fiber.key; name : string }

let create ~name () = { key = Braid.Fiber.create_key ~name (); name }
let name field = field.name
let get field = Braid.Fiber.get field.key
let with_value field v f = Braid.Fiber.with_binding field.key v f
