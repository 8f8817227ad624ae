let echo = Echo.experiment
let timers = Timers.experiment
let wake = Wake.experiment
