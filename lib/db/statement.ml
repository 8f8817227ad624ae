type t = { sql : string; name : string }

let make sql = { sql; name = "braid_" ^ Digest.to_hex (Digest.string sql) }
let sql t = t.sql
let name t = t.name
