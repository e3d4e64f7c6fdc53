"""The meter sign's web pages, shared by the controller and the table agent.

:mod:`jackpot.web.server` is a small HTTP/1.1 server on asyncio streams (standard library
only, so the table agent stays installable with grpcio and protobuf alone);
:mod:`jackpot.web.sign` holds the sign's page and the shape of its events.
"""
