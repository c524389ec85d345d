"""RabbitMQ stopped for 30 s under the running cloud, then started.

Every service reconnects by itself: the agents' reports reach the
collector again, the scheduler's listener hears them again (a policy
server is placed, which in strict mode needs a fresh report in the
scheduler's own cache), and no host goes unheard: the longest silence
in each host's report history is within the report TTL.
"""

import datetime
import subprocess
import time

from tests.cloud.faults import base
from tests.cloud import infra

HOME = {'hw:numa_policy': 'home'}
OUTAGE = 30


def _rabbitmqctl(*args):
    subprocess.run([infra.RABBITMQCTL, *args], check=True,
                   capture_output=True, timeout=120)


class BrokerRestartTest(base.FaultTestBase):

    def test_everything_reconnects_within_the_report_ttl(self):
        hosts = sorted(self.CLOUD.computes)
        self.addCleanup(_rabbitmqctl, 'start_app')
        stopped_at = datetime.datetime.now(datetime.timezone.utc)
        _rabbitmqctl('stop_app')
        stopped = time.monotonic()
        time.sleep(OUTAGE)
        _rabbitmqctl('start_app')
        self.note('seconds the broker was down',
                  round(time.monotonic() - stopped))
        began = time.monotonic()
        for host in hosts:
            # A report generated after the restart: the agent's own
            # connection came back (a fresh one may predate the outage
            # by less than the TTL).
            self.wait_report_since(
                host, began, f'a report of {host} made after the restart')
        self.note('seconds from the broker started to every agent heard',
                  round(time.monotonic() - began))
        # The scheduler heard them too: strict mode places a policy
        # server only on a host whose report its own cache holds fresh.
        server = self.boot('numa-faults-after-broker', HOME)
        self.note('seconds from the broker started to a policy server '
                  'ACTIVE', round(time.monotonic() - began))
        self.applied(server['id'])
        for host in hosts:
            silence = self.longest_silence(host, stopped_at)
            self.note(f'longest silence of {host} in seconds',
                      round(silence))
            self.assertLessEqual(silence, base.REPORT_TTL, host)
