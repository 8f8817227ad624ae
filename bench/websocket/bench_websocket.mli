(** The [websocket] experiment: WebSocket messages through Braid's server
    ([bench/websocket/ws_server.ml]: {!Braid_web.Websocket}, one event loop) and
    through a maintained peer, Python's [websockets] (its asyncio server, one
    event loop; the first of [/usr/bin/python3] and [python3] that can import
    it, else the experiment fails saying so), both on core 0. The load is this
    process on core 1: a Braid loop of WebSocket clients ({!Ws_client}, masked
    frames, no compression).

    - {b echo 1:1}: 10 connections, each sending a 64-byte text message and
      waiting for it back, in a loop: messages per second, and the server's CPU
      time (user + system of its process tree, from [/proc]) per message.
    - {b broadcast 1:100}: 100 connections in a room; the first sends 64-byte
      messages, each delivered to all 100 (the sender too), at most 16 not yet
      received by every client: deliveries per second, messages sent per second,
      server CPU per delivery. Braid's room is examples/chat's (an outbox
      channel and a writer fiber per member); the peer's is
      [websockets.broadcast].

    Each client checks what it receives (the echo is the message sent; the
    broadcast arrives whole and in order, nothing missing); a failure, a closed
    connection or a run stalled 20 s past its end fails the run, and any failed
    run fails its cell ([nan] and a [failed runs] row) instead of giving a
    figure. Rounds: a fresh server each, Braid then the peer, each scenario in
    turn; medians over rounds; the client's CPU share is reported to show
    whether the load generator, not the server, was the limit. *)

val experiment : Bench_harness.experiment
