module Promise = Promise
module Mvar = Mvar
module Mutex = Mutex
module Condition = Condition
module Semaphore = Semaphore
module Channel = Channel
module Lazy = Lazy
