let producer_consumer = Producer_consumer.experiment
let cancellation_cost = Cancellation_cost.experiment
