exception Error = Connection.Error

module Server_context = Server_context
module Client_context = Client_context
module Connection = Connection
