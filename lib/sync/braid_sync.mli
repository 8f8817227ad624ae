(** Synchronisation structures that work under every Braid scheduler.

    Every blocking operation here goes through {!Braid.suspend}: inside a fiber
    (FIFO scheduler, pool task, IO loop, Lwt bridge) it blocks only that fiber;
    in a bare domain or systhread it parks the thread. A fiber cancelled while
    blocked is woken at once with {!Braid.Cancelled}, and no structure ever
    hands a value, lock or permit to a cancelled waiter. All structures are
    lock-free, and all of them can be shared by fibers of different schedulers,
    bare domains and systhreads at the same time. *)

module Promise = Promise
module Mvar = Mvar
module Mutex = Mutex
module Condition = Condition
module Semaphore = Semaphore
module Channel = Channel
module Lazy = Lazy
