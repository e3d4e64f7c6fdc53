"""The controller's web port (``serve --web-port``): the meter sign and the floor view.

:mod:`controller.web.app` routes and authenticates (client certificates, as gRPC);
:mod:`controller.web.sign_feed` feeds the sign from the shared meter watcher;
:mod:`controller.web.floor` builds the floor view and takes its approvals. The HTTP server
itself is :mod:`jackpot.web.server`, shared with the table agent's sign.
"""
