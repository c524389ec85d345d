"""Signed reports: a shared secret proves a report came from an agent.

The agent adds an HMAC-SHA256 of the report's primitive to the payload
it sends, under :data:`SIGNATURE_KEY`, beside the primitive's own keys
(so the versioned object itself is unchanged, and consumers that verify
nothing ignore it). The MAC covers the primitive as canonical JSON:
sorted keys, no whitespace, non-ASCII escaped, so both ends compute it
over the same bytes whatever JSON library or key order carried it.

Consumers (the scheduler's report cache, the collector) verify when a
secret is configured and then refuse unsigned reports. Rotation: a list
of accepted secrets, the first one signs (doc/source/security.rst).
"""

import hashlib
import hmac
import json

from nova_numa_policy.contracts import exception

SIGNATURE_KEY = 'numa_policy_signature'
ALGORITHM = 'hmac-sha256'


def _canonical(primitive):
    body = {k: v for k, v in primitive.items() if k != SIGNATURE_KEY}
    return json.dumps(body, sort_keys=True, separators=(',', ':'),
                      ensure_ascii=True, allow_nan=False).encode()


def _mac(secret, primitive):
    return hmac.new(secret.encode(), _canonical(primitive),
                    hashlib.sha256).hexdigest()


def sign(primitive, secret):
    """The payload to send: ``primitive`` with its signature added."""
    signed = dict(primitive)
    signed[SIGNATURE_KEY] = {'algorithm': ALGORITHM,
                             'value': _mac(secret, primitive)}
    return signed


def verify(payload, secrets):
    """Check ``payload``'s signature against any of ``secrets``.

    Nothing is checked when no secret is configured.

    :raises UnsignedReport: a secret is configured, the payload has no
        signature.
    :raises BadSignature: the signature matches none of the secrets.
    """
    if not secrets:
        return
    if not isinstance(payload, dict) or SIGNATURE_KEY not in payload:
        raise exception.UnsignedReport(
            'report is not signed and [numa_policy_reports] secret is set')
    signature = payload[SIGNATURE_KEY]
    value = signature.get('value') if isinstance(signature, dict) else None
    if (not isinstance(value, str) or len(value) != 64
            or signature.get('algorithm') != ALGORITHM):
        raise exception.BadSignature('report signature is unreadable')
    try:
        expected = [_mac(secret, payload) for secret in secrets]
    except (TypeError, ValueError) as exc:
        # Not JSON a signer could have produced (NaN, odd types).
        raise exception.BadSignature(f'report cannot be signed: {exc}')
    if not any(_same_mac(value, mac) for mac in expected):
        raise exception.BadSignature(
            'report signature matches no configured secret')


def _same_mac(sent, expected):
    """Constant-time comparison of a sent MAC with an expected one.

    As bytes: hmac.compare_digest() refuses two str when either holds
    a non-ASCII character (TypeError), and the sender chooses ``sent``.
    surrogatepass, as JSON can carry a lone surrogate that plain UTF-8
    cannot encode. A non-ASCII MAC never matches a hex digest.
    """
    return hmac.compare_digest(sent.encode('utf-8', 'surrogatepass'),
                               expected.encode('ascii'))
