"""HTTP errors the API answers with, each with a message for the caller."""


class HttpError(Exception):
    status = 500
    title = 'Internal Server Error'

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def body(self):
        return {'error': {'code': self.status, 'title': self.title,
                          'message': self.message}}


class BadRequest(HttpError):
    status = 400
    title = 'Bad Request'


class Forbidden(HttpError):
    status = 403
    title = 'Forbidden'


class NotFound(HttpError):
    status = 404
    title = 'Not Found'


class MethodNotAllowed(HttpError):
    status = 405
    title = 'Method Not Allowed'


class ServiceUnavailable(HttpError):
    status = 503
    title = 'Service Unavailable'
