let echo = Echo.experiment
let timers = Timers.experiment
