"""The WSGI application: routing, authentication, JSON errors.

``/``, ``/v1`` and ``/v1/openapi.json`` are public (version discovery and
the API description); every other path goes through authentication
(keystonemiddleware, or header trust with ``auth_strategy = noauth``) and
then the oslo.policy check of its handler.
"""

from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_middleware import request_id
from oslo_serialization import jsonutils
import routes
import webob
import webob.dec

from nova_numa_policy.rest import controllers
from nova_numa_policy.rest import errors
from nova_numa_policy.rest import openapi
from nova_numa_policy.rest import policies
from nova_numa_policy.rest import validation

LOG = logging.getLogger(__name__)

JSON = 'application/json'
PUBLIC_PATHS = frozenset(('', '/', '/v1', '/v1/', '/v1/openapi.json'))
ALLOWED_METHODS = ('GET', 'HEAD')

ROUTES = (
    ('/', 'versions'),
    ('/v1', 'versions'),
    ('/v1/openapi.json', 'openapi'),
    ('/v1/hosts', 'list_hosts'),
    ('/v1/hosts/{host}', 'show_host'),
    ('/v1/hosts/{host}/reports', 'list_host_reports'),
    ('/v1/instances', 'list_instances'),
    ('/v1/instances/{uuid}', 'show_instance'),
    ('/v1/actions', 'list_actions'),
    ('/v1/explain', 'explain'),
)


def _json_response(status, body):
    response = webob.Response(status=status, content_type=JSON,
                              charset='UTF-8')
    response.text = jsonutils.dumps(body)
    return response


def _versions(request):
    return {'versions': [{
        'id': 'v1', 'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': request.host_url + '/v1'},
                  {'rel': 'describedby',
                   'href': request.host_url + '/v1/openapi.json'}]}]}


class Router:
    """Maps a path to a handler and every failure to a JSON error."""

    def __init__(self, handlers, description):
        self._handlers = handlers
        self._description = description
        self._mapper = routes.Mapper()
        for path, action in ROUTES:
            self._mapper.connect(path, action=action)

    def _dispatch(self, request):
        try:
            path = request.path_info
        except UnicodeDecodeError:
            raise errors.BadRequest('the request path is not UTF-8')
        match = self._mapper.match(path.rstrip('/') or '/')
        if match is None:
            raise errors.NotFound(f'no resource at {path[:255]!r}')
        if request.method not in ALLOWED_METHODS:
            raise errors.MethodNotAllowed(
                f'{request.method} is not allowed here; this API is '
                f'read-only ({", ".join(ALLOWED_METHODS)})')
        action = match.pop('action')
        if action == 'versions':
            return _versions(request)
        if action == 'openapi':
            return self._description
        # A query that is not UTF-8 is refused before anything reads it.
        validation.query_pairs(request.query_string)
        context = oslo_context.RequestContext.from_environ(request.environ)
        return getattr(self._handlers, action)(request, context, **match)

    @webob.dec.wsgify
    def __call__(self, request):
        try:
            response = _json_response(200, self._dispatch(request))
        except errors.HttpError as exc:
            response = _json_response(exc.status, exc.body())
            if exc.status == 405:
                response.allow = ALLOWED_METHODS
        except Exception:
            LOG.exception('Unexpected error answering %s %s',
                          request.method, request.path_qs[:512])
            response = _json_response(500, errors.HttpError(
                'unexpected error; see the API log').body())
        return response


def _authenticated(app, conf):
    if conf.numa_policy_api.auth_strategy == 'noauth':
        # The context is read from the X-Roles / X-Project-Id headers as
        # sent: for tests only, as the option's help says.
        return app
    from keystonemiddleware import auth_token
    return auth_token.AuthProtocol(app, {'oslo_config_config': conf})


def build_app(conf, storage, enforcer=None):
    """The API as a WSGI callable reading ``storage``."""
    group = conf.numa_policy_api
    handlers = controllers.Controllers(
        storage, enforcer or policies.make_enforcer(conf),
        group.default_limit, group.max_limit,
        scheduler_group=conf.numa_policy_scheduler)
    router = Router(handlers, openapi.document(
        group.max_limit, token_auth=group.auth_strategy != 'noauth'))
    protected = _authenticated(router, conf)

    def dispatch(environ, start_response):
        path = environ.get('PATH_INFO', '')
        app = router if path in PUBLIC_PATHS else protected
        return app(environ, start_response)

    return request_id.RequestId(dispatch)
