"""HTTP errors the API answers with, each with a message for the caller."""

import http


class HttpError(Exception):
    status = 500

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    @property
    def title(self):
        return http.HTTPStatus(self.status).phrase

    def body(self):
        return {'error': {'code': self.status, 'title': self.title,
                          'message': self.message}}


class BadRequest(HttpError):
    status = 400


class Forbidden(HttpError):
    status = 403


class NotFound(HttpError):
    status = 404


class MethodNotAllowed(HttpError):
    status = 405


class ServiceUnavailable(HttpError):
    status = 503
