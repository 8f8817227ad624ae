(* Operations live in slots, small integers reused last-freed first (their
   C buffers stay warm). A slot is free, pending (submitted, no completion
   yet) or done (completed, its fiber not yet run). Its waiter is the
   suspended fiber's resumer, or [idle]: a pending slot with an idle waiter
   is an orphan, whose fiber was cancelled or whose descriptor was closed;
   its completion frees it. Each operation has exactly one completion, so a
   slot is never reused before its last one has come. *)

let idle : unit Braid.resumer = fun _ -> false
let free = 0
let pending = 1
let done_ = 2
let receive = 0
let transmit = 1

(* An operation's user data: negative, below the poller's [-1] (a failed
   removal's) and never a poll's (token and generation, both >= 0). *)
let user_data slot = -2 - slot
let is_operation data = data < -1

(* Ignored completions: a cancellation that found nothing. *)
let nobody = -1

(* A receive asks for at most this much, a send copies at most this much:
   the slot's buffer is that big at most. A short read or write is the
   caller's to loop over, as with read(2). *)
let max_bytes = 1 lsl 18

(* A socket's sends (see [send]): at most one in flight, [inflight], and the
   bytes written since, gathered in a second slot, [next], sent when the
   first completes. So sends never reorder, a short send is sent on from
   where it stopped, and at most two slots' worth of bytes wait per socket. *)
type stream = {
  mutable unix : Unix.file_descr;
      (** A duplicate once the loop closed the socket with bytes still queued:
          it keeps the socket open until they have gone. *)
  mutable inflight : int;  (** A slot, or [-1]. *)
  mutable sent : int;  (** Of [inflight]'s bytes, how many went. *)
  mutable length : int;  (** Of [inflight]'s bytes. *)
  mutable inflight_more : bool;
  mutable next : int;  (** A slot, or [-1]: bytes not submitted yet. *)
  mutable next_length : int;
  mutable next_more : bool;
  mutable error : int;
      (** The errno of a failed send, or 0. Every later write raises it. *)
  mutable blocked : unit Braid.resumer list;
      (** Writers waiting for room, or for the queue to empty ({!flush}). *)
  mutable closing : bool;
}

let no_stream =
  {
    unix = Unix.stdin;
    inflight = -1;
    sent = 0;
    length = 0;
    inflight_more = false;
    next = -1;
    next_length = 0;
    next_more = false;
    error = 0;
    blocked = [];
    closing = true;
  }

(* Bytes a receive got after its fiber had gone, for the next read. *)
type kept = { bytes : bytes; mutable start : int; mutable length : int }

type t = {
  ring : Uring_ring.t;
  mutable states : int array;  (** By slot. *)
  mutable waiters : unit Braid.resumer array;
  mutable results : int array;
  mutable kinds : int array;
  mutable tokens : int array;
      (** The descriptor's token; [-1] once it is closed: what the operation
          gets then is dropped. *)
  mutable free_slots : int array;  (** A stack of [free_count]. *)
  mutable free_count : int;
  mutable slots : int;  (** Slots ever used. *)
  mutable receiving : int array;
      (** By token: the slot of its receive in flight, or [-1]. *)
  mutable streams : stream array;  (** By token; [no_stream] if none. *)
  mutable owners : stream array;  (** By slot, for sends. *)
  mutable lingering : stream list;
      (** Closed by the loop, their bytes still going; rarely any. *)
  kept : (int, kept) Hashtbl.t;  (** By token; rarely any. *)
  mutable ended : Bytes.t;
      (** By token: ['\001'] once a receive got the end of stream. A stream
          socket's end is for ever: reads after it return 0 at once, as recv(2)
          would, rather than each costing a turn of the loop (a server reads its
          end twice before it closes; the client's next connection must not find
          the old ones still counted). *)
  mutable waiting : int;
}

let create ring =
  {
    ring;
    states = [||];
    waiters = [||];
    results = [||];
    kinds = [||];
    tokens = [||];
    free_slots = [||];
    free_count = 0;
    slots = 0;
    receiving = [||];
    streams = [||];
    owners = [||];
    lingering = [];
    kept = Hashtbl.create 8;
    ended = Bytes.empty;
    waiting = 0;
  }

let waiting t = t.waiting
let busy = -1

let grow array size ~filler =
  let bigger = Array.make (max (2 * Array.length array) (size + 64)) filler in
  Array.blit array 0 bigger 0 (Array.length array);
  bigger

let take_slot t ~token ~kind =
  let slot =
    if t.free_count > 0 then (
      t.free_count <- t.free_count - 1;
      t.free_slots.(t.free_count))
    else
      let slot = t.slots in
      t.slots <- slot + 1;
      if slot >= Array.length t.states then (
        t.states <- grow t.states slot ~filler:free;
        t.waiters <- grow t.waiters slot ~filler:idle;
        t.results <- grow t.results slot ~filler:0;
        t.kinds <- grow t.kinds slot ~filler:0;
        t.tokens <- grow t.tokens slot ~filler:(-1);
        t.owners <- grow t.owners slot ~filler:no_stream;
        t.free_slots <- grow t.free_slots slot ~filler:0);
      slot
  in
  t.states.(slot) <- pending;
  t.kinds.(slot) <- kind;
  t.tokens.(slot) <- token;
  slot

let release t slot =
  t.states.(slot) <- free;
  t.owners.(slot) <- no_stream;
  t.waiters.(slot) <- idle;
  t.free_slots.(t.free_count) <- slot;
  t.free_count <- t.free_count + 1

let ensure_token t token =
  if token >= Array.length t.receiving then (
    t.receiving <- grow t.receiving token ~filler:(-1);
    t.streams <- grow t.streams token ~filler:no_stream;
    let ended = Bytes.make (Array.length t.receiving) '\000' in
    Bytes.blit t.ended 0 ended 0 (Bytes.length t.ended);
    t.ended <- ended)

(* The descriptor may have been closed, and its token reused, while the
   fiber waited to run. *)
let clear table ~token slot = if table.(token) = slot then table.(token) <- -1

(* Keeps [length] bytes of [slot]'s buffer from [from] for [token]'s next
   read, after any kept already (the older bytes come first). *)
let keep t ~token slot ~from ~length =
  let bytes =
    match Hashtbl.find_opt t.kept token with
    | None -> Bytes.create length
    | Some k ->
        let b = Bytes.create (k.length + length) in
        Bytes.blit k.bytes k.start b 0 k.length;
        b
  in
  let before = Bytes.length bytes - length in
  Uring_ring.copy_out t.ring slot from bytes before length;
  Hashtbl.replace t.kept token { bytes; start = 0; length = Bytes.length bytes }

let take_kept t ~token buf off len =
  if Hashtbl.length t.kept = 0 then 0
  else
    match Hashtbl.find_opt t.kept token with
    | None -> 0
    | Some k ->
        let n = min len k.length in
        Bytes.blit k.bytes k.start buf off n;
        k.start <- k.start + n;
        k.length <- k.length - n;
        if k.length = 0 then Hashtbl.remove t.kept token;
        n

(* The completion of an operation whose fiber has gone: a receive's bytes
   are kept unless its descriptor was closed. *)
let finish_orphan t slot result =
  let token = t.tokens.(slot) in
  if token >= 0 then
    if t.kinds.(slot) = receive then (
      clear t.receiving ~token slot;
      if result > 0 then keep t ~token slot ~from:0 ~length:result);
  release t slot

(* Suspends until [slot] completes or its descriptor is closed (the slot is
   then still pending). *)
let await t slot =
  match
    Braid.suspend (fun resume ->
        t.waiters.(slot) <- resume;
        t.waiting <- t.waiting + 1;
        None)
  with
  | () -> ()
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      if t.states.(slot) = done_ then finish_orphan t slot t.results.(slot)
      else if t.waiters.(slot) != idle then (
        t.waiters.(slot) <- idle;
        t.waiting <- t.waiting - 1;
        Uring_ring.cancel t.ring (user_data slot) nobody);
      Printexc.raise_with_backtrace e bt

(* Called after [await]: the result, or [EBADF] if the descriptor was
   closed under the operation (which is then an orphan). *)
let outcome t slot ~op =
  if t.states.(slot) <> done_ then raise (Unix.Unix_error (Unix.EBADF, op, ""))
  else t.results.(slot)

(* A socket that may have bytes waiting (a fresh one, or one that an
   event or a full read said was readable) is read with recv(2) first, as
   on epoll: what is there is returned at once, in this turn of the loop.
   Only a read that would block becomes a ring operation. Otherwise a fresh
   connection that had already sent its request, or its end, was read only
   at the next turn, after the acceptor had taken the connections queued
   behind it (a per-client limit counted the ended ones still). *)
let rec recv t unix ~token ~ready buf off len =
  ensure_token t token;
  match take_kept t ~token buf off len with
  | n when n > 0 -> n
  | _ when Bytes.unsafe_get t.ended token <> '\000' -> 0
  | _ -> (
      let slot = t.receiving.(token) in
      if slot >= 0 then
        if t.states.(slot) = pending && t.waiters.(slot) == idle then
          (* An orphan: its bytes come before any a new receive would get. *)
          received t unix ~token slot buf off len
        else busy
      else
        match if ready then Syscall.recv unix buf off len else -1 with
        | n when n >= 0 ->
            if n = 0 then Bytes.unsafe_set t.ended token '\001';
            n
        | _ ->
            let slot = take_slot t ~token ~kind:receive in
            Uring_ring.recv t.ring unix slot (min len max_bytes)
              (user_data slot);
            t.receiving.(token) <- slot;
            received t unix ~token slot buf off len)

and received t unix ~token slot buf off len =
  await t slot;
  let result = outcome t slot ~op:"read" in
  clear t.receiving ~token slot;
  if result >= 0 then (
    if result = 0 then Bytes.unsafe_set t.ended token '\001';
    let n = min result len in
    Uring_ring.copy_out t.ring slot 0 buf off n;
    (* An adopted receive may have asked for more than this read. *)
    if result > n then keep t ~token slot ~from:n ~length:(result - n);
    release t slot;
    n)
  else (
    release t slot;
    if result = -Uring_ring.ecanceled then
      recv t unix ~token ~ready:false buf off len
    else Uring_ring.fail (-result) "read")

let wake_blocked s =
  match s.blocked with
  | [] -> ()
  | blocked ->
      s.blocked <- [];
      List.iter (fun w -> ignore (w (Ok ()) : bool)) blocked

let submit_inflight t s =
  Uring_ring.send t.ring s.unix s.inflight s.sent (s.length - s.sent)
    s.inflight_more (user_data s.inflight)

(* The socket's queue is empty, or failed: a socket the loop closed is
   closed now. *)
let settled t s =
  if s.closing && s.inflight < 0 then (
    t.lingering <- List.filter (fun l -> l != s) t.lingering;
    try Unix.close s.unix with Unix.Unix_error _ -> ())

let drop_queue t s =
  if s.inflight >= 0 then release t s.inflight;
  if s.next >= 0 then release t s.next;
  s.inflight <- -1;
  s.next <- -1;
  s.next_length <- 0

(* The completion of [slot], [s]'s send in flight. *)
let sent t slot result =
  let s = t.owners.(slot) in
  if result >= 0 then (
    s.sent <- s.sent + result;
    if s.sent < s.length then submit_inflight t s
    else (
      release t slot;
      s.inflight <- -1;
      if s.next >= 0 then (
        s.inflight <- s.next;
        s.sent <- 0;
        s.length <- s.next_length;
        s.inflight_more <- s.next_more;
        s.next <- -1;
        s.next_length <- 0;
        submit_inflight t s);
      wake_blocked s;
      settled t s))
  else (
    if s.error = 0 then s.error <- -result;
    drop_queue t s;
    wake_blocked s;
    settled t s)

let complete t data result =
  let slot = -2 - data in
  let waiter = t.waiters.(slot) in
  if t.kinds.(slot) = transmit then sent t slot result
  else if waiter == idle then finish_orphan t slot result
  else (
    t.waiters.(slot) <- idle;
    t.waiting <- t.waiting - 1;
    t.results.(slot) <- result;
    t.states.(slot) <- done_;
    (* False if the fiber was resumed otherwise (cancelled) meanwhile: it
       will find its slot done, and treat it as an orphan's. *)
    ignore (waiter (Ok ()) : bool))

(* Suspends the writer until [s]'s send in flight completes, or the socket
   is closed. *)
let block t s =
  let mine = ref idle in
  match
    Braid.suspend (fun resume ->
        mine := resume;
        s.blocked <- resume :: s.blocked;
        t.waiting <- t.waiting + 1;
        None)
  with
  | () -> t.waiting <- t.waiting - 1
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      (* Not registered if the fiber was cancelled before it suspended. *)
      if !mine != idle then (
        t.waiting <- t.waiting - 1;
        s.blocked <- List.filter (fun w -> w != !mine) s.blocked);
      Printexc.raise_with_backtrace e bt

let stream t unix ~token =
  let s = t.streams.(token) in
  if s != no_stream then s
  else
    let s =
      {
        no_stream with
        unix;
        closing = false;
        inflight = -1;
        next = -1;
        blocked = [];
      }
    in
    t.streams.(token) <- s;
    s

let check s ~op =
  if s.closing then raise (Unix.Unix_error (Unix.EBADF, op, ""));
  if s.error <> 0 then Uring_ring.fail s.error op

(* A send does not wait for its completion: its bytes are copied into a
   slot's buffer and it returns. The first goes at once (with the loop's
   next submission); what is written while it is in flight is gathered in
   the [next] slot, sent as one when it completes. A writer waits only when
   [next] is full: a slow reader holds at most two slots' worth of a
   socket's bytes here. *)
let rec send t unix ~token ~more buf off len =
  ensure_token t token;
  let s = stream t unix ~token in
  check s ~op:"write";
  if s.inflight < 0 then (
    let n = min len max_bytes in
    let slot = take_slot t ~token ~kind:transmit in
    t.owners.(slot) <- s;
    Uring_ring.append t.ring slot 0 buf off n;
    s.inflight <- slot;
    s.sent <- 0;
    s.length <- n;
    s.inflight_more <- more;
    submit_inflight t s;
    n)
  else if s.next_length >= max_bytes then (
    block t s;
    check s ~op:"write";
    send t unix ~token ~more buf off len)
  else (
    if s.next < 0 then (
      let slot = take_slot t ~token ~kind:transmit in
      t.owners.(slot) <- s;
      s.next <- slot);
    let n = min len (max_bytes - s.next_length) in
    Uring_ring.append t.ring s.next s.next_length buf off n;
    s.next_length <- s.next_length + n;
    s.next_more <- more;
    n)

let rec flush t ~token ~op =
  if token < Array.length t.streams then
    let s = t.streams.(token) in
    if s != no_stream then (
      check s ~op;
      if s.inflight >= 0 then (
        block t s;
        check s ~op;
        flush t ~token ~op))

let queued t ~token =
  if token < Array.length t.streams then
    let s = t.streams.(token) in
    if s.inflight < 0 then 0 else s.length - s.sent + s.next_length
  else 0

(* The fiber woken here finds its slot still pending: [outcome] raises
   EBADF, and the slot, now an orphan, is freed by its completion. *)
let forget_slot t slot =
  t.tokens.(slot) <- -1;
  let waiter = t.waiters.(slot) in
  if waiter != idle then (
    t.waiters.(slot) <- idle;
    t.waiting <- t.waiting - 1;
    ignore (waiter (Ok ()) : bool))

(* A socket closed with bytes still queued keeps them: a duplicate of its
   descriptor holds it open until they have gone (or failed), as close(2)
   lets the kernel send what is in the socket's buffer. Writers waiting for
   room fail with [EBADF]. *)
let linger t unix s =
  s.closing <- true;
  (match Unix.dup ~cloexec:true unix with
  | dup ->
      s.unix <- dup;
      t.lingering <- s :: t.lingering
  | exception Unix.Unix_error _ ->
      (* No descriptor left: the bytes are lost, as the loop's cancellation
         of what is in flight below drops them. *)
      Uring_ring.cancel_fd t.ring unix nobody;
      drop_queue t s);
  wake_blocked s

let forget t unix ~token =
  if token < Array.length t.receiving then (
    Hashtbl.remove t.kept token;
    Bytes.unsafe_set t.ended token '\000';
    let r = t.receiving.(token) and s = t.streams.(token) in
    t.streams.(token) <- no_stream;
    let sending = s != no_stream && s.inflight >= 0 in
    if sending then linger t unix s
    else if s != no_stream then (
      s.closing <- true;
      wake_blocked s);
    if r >= 0 then (
      Uring_ring.cancel t.ring (user_data r) nobody;
      t.receiving.(token) <- -1;
      forget_slot t r);
    r >= 0 || sending)
  else false

let close_lingering t =
  List.iter
    (fun s -> try Unix.close s.unix with Unix.Unix_error _ -> ())
    t.lingering;
  t.lingering <- []

(* Like a cancellation of the reader's fiber: the receive is cancelled, and
   what it may still get is kept. *)
let interrupt_reader t ~token e =
  if token < Array.length t.receiving then
    let slot = t.receiving.(token) in
    if slot >= 0 && t.states.(slot) = pending then
      let waiter = t.waiters.(slot) in
      if waiter != idle then (
        t.waiters.(slot) <- idle;
        t.waiting <- t.waiting - 1;
        Uring_ring.cancel t.ring (user_data slot) nobody;
        ignore (waiter (Error e) : bool))
