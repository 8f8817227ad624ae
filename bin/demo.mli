(** The demonstration routes of [braid serve --demo]. *)

open Braid_web

val reverse : Handler.t
(** [POST /reverse]: answers the request body reversed byte-wise
    ([application/octet-stream]). The body limit is the server's. *)

val fib_limit : int
(** The largest [n] that [/fib/:n] computes: 35. *)

val sequential_fib : int -> int
(** The naive doubly recursive Fibonacci function. *)

val parallel_fib : Braid_pool.t -> int -> int
(** The same recursion split into [pool] tasks down to [n = 20], below which a
    task is too small to be worth stealing. Awaiting the subtasks blocks only
    the caller (a pool task, a fiber of any scheduler, or a thread). *)

val fib : Braid_pool.t -> Handler.t
(** [GET /fib/:n]: the [n]th Fibonacci number, computed by the naive recursion
    on the work-stealing [pool] (split into pool tasks down to [n = 20]) and
    awaited by the connection's fiber, which blocks only itself: the event loop
    keeps serving. [400] unless [n] is an integer from 0 to {!fib_limit}. *)

val sleep_limit : int
(** The longest [/sleep/:ms] accepted: 60000 ms. *)

val sleep : Handler.t
(** [GET /sleep/:ms]: answers after sleeping [ms] milliseconds (blocking only
    the connection's fiber), a slow request for trying timeouts and graceful
    shutdown. [400] unless [ms] is an integer from 0 to {!sleep_limit}. *)

val routes : Braid_pool.t -> Router.t -> Router.t
(** [routes pool r] is [r] with [POST /reverse], [GET /fib/:n] and
    [GET /sleep/:ms]. *)
