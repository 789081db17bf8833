"""The base of both JSON APIs (the leaderboard's REST API and the annotation queue's): the error
handler, the view base, the serializer mixin refusing unknown fields, the error body and the
schema helpers."""
