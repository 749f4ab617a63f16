"""The wire types client, broker and front end share: what a command carries, below all three.

Models the types of Pulsar's `PulsarApi.proto` and `pulsar-client-api` that both sides of a connection speak:
`acks` (`CommandAck.AckType`, the ack command, batch ack sets), `subscription` (`CommandSubscribe.SubType`,
`InitialPosition`, Key_Shared modes, hash ranges and the Key_Shared policy a subscribe carries) and
`server_errors` (`ServerError`, the codes a broker answers with). Imports nothing else of pulsarlab but errors.
"""
