let eproto = Connection.eproto

module Server_context = Server_context
module Client_context = Client_context
module Connection = Connection
module Password = Password
module Dev_certificate = Dev_certificate
