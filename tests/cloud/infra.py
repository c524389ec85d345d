"""The machine's MariaDB and RabbitMQ, which the control plane borrows.

Only the cloud's own databases (``numa_cloud_*``) and virtual host
(``endpoints.RABBIT_VHOST``) are ever created or dropped: the functional
tiers use the same servers.
"""

import subprocess

import pymysql

from tests.cloud import endpoints
from tests.cloud import layout as lay

RABBITMQCTL = 'rabbitmqctl'


class InfraError(Exception):
    """The machine's MariaDB or RabbitMQ refused what the cloud needs."""


def _connect():
    try:
        return pymysql.connect(host=endpoints.HOST_ADDRESS,
                               port=lay.MYSQL_PORT, user='root',
                               connect_timeout=10)
    except pymysql.MySQLError as exc:
        raise InfraError(
            f'MariaDB on {endpoints.HOST_ADDRESS}:{lay.MYSQL_PORT} '
            f'(root, no password): {exc}') from exc


def _checked(name):
    # The names are ours, but a DROP must never reach another database.
    if not name.startswith(lay.DB_PREFIX) or not name.replace(
            '_', '').isalnum():
        raise InfraError(f'refusing database name {name!r}')
    return name


def _databases(services, create):
    connection = _connect()
    try:
        with connection.cursor() as cursor:
            for service in services:
                name = _checked(lay.db_name(service))
                cursor.execute(f'DROP DATABASE IF EXISTS `{name}`')
                if create:
                    cursor.execute(f'CREATE DATABASE `{name}` '
                                   'CHARACTER SET utf8mb4')
    finally:
        connection.close()


def recreate_databases(services=lay.DATABASES):
    _databases(services, create=True)


def drop_databases(services=lay.DATABASES):
    _databases(services, create=False)


def existing_databases():
    """The cloud's databases that exist now (for tests and ``down``)."""
    connection = _connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute('SHOW DATABASES LIKE %s',
                           (lay.DB_PREFIX.replace('_', r'\_') + '%',))
            return sorted(row[0] for row in cursor.fetchall())
    finally:
        connection.close()


def vhost_commands(vhost=endpoints.RABBIT_VHOST, user=lay.RABBIT_USER):
    """rabbitmqctl commands that give the cloud a fresh virtual host."""
    return [
        [RABBITMQCTL, '-q', 'delete_vhost', vhost],
        [RABBITMQCTL, '-q', 'add_vhost', vhost],
        [RABBITMQCTL, '-q', 'set_permissions', '-p', vhost, user,
         '.*', '.*', '.*'],
    ]


def _rabbitmqctl(argv, missing_ok=False):
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=120)
    if result.returncode and not (
            missing_ok and 'does not exist' in result.stdout + result.stderr
            or missing_ok and 'no_such_vhost' in result.stderr):
        raise InfraError(f'{" ".join(argv)} failed ({result.returncode}): '
                         f'{(result.stdout + result.stderr).strip()}')


def delete_vhost():
    _rabbitmqctl(vhost_commands()[0], missing_ok=True)


def keystone_password_hashes():
    """Every password hash keystone keeps in the cloud's database."""
    connection = _connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute('SELECT password_hash FROM `%s`.password'
                           % _checked(lay.db_name('keystone')))
            return [row[0] for row in cursor.fetchall()]
    finally:
        connection.close()
