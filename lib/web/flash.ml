let add ?(category = "info") r message =
  Session.Private.add_flash r ~category message

let take r = Session.Private.take_flash r
