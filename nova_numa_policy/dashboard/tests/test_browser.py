"""The panel in a real headless Chromium: screenshots plus pixel checks.

The live server runs Django in a thread of this process, so the
wsgi-intercept of the API applies to it as to the other tests. The
screenshots stay in ``.artifacts/`` at the top of the source tree.
"""

import io
import os
import shutil
import tempfile
import unittest

from django.contrib.staticfiles import testing as static_testing
from openstack_dashboard.test import helpers
from PIL import Image

from nova_numa_policy.dashboard.tests import base

try:
    from selenium import webdriver
    from selenium.webdriver.chrome import service as chrome_service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import ui
except ImportError:  # reported by _browser_missing()
    webdriver = None

ARTIFACTS = os.path.abspath(os.path.join(
    os.path.dirname(__file__), '..', '..', '..', '.artifacts'))
INDEX_PNG = os.path.join(ARTIFACTS, 'horizon-numa-panel.png')
DETAIL_PNG = os.path.join(ARTIFACTS, 'horizon-numa-host.png')
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
CHROMEDRIVER = shutil.which('chromedriver')
CHROME_FLAGS = ('--headless', '--no-sandbox', '--disable-gpu',
                '--disable-quic', '--no-first-run',
                '--disable-background-networking',
                '--disable-component-update', '--disable-sync',
                '--force-device-scale-factor=1', '--window-size=1600,1200')
# The CSS colours of the bars (numa.css) and the chart's line and bars.
HOT_RED = (208, 49, 45)
OK_GREEN = (46, 158, 68)
LINE_BLUE = (47, 111, 208)


def _browser_missing():
    if webdriver is None:
        return 'selenium is not installed (pip install selenium)'
    if not (CHROMIUM and CHROMEDRIVER):
        return ('Chromium and chromedriver are not installed '
                '(apt-get install chromium chromium-driver)')
    return None


def _make_driver(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS + (f'--user-data-dir={profile}',):
        options.add_argument(flag)
    return webdriver.Chrome(
        options=options,
        service=chrome_service.Service(executable_path=CHROMEDRIVER))


def _close(colour, expected, tolerance=12):
    return all(abs(a - b) <= tolerance for a, b in zip(colour, expected))


def _share(pixels, colour):
    """Fraction of ``pixels`` of about ``colour``; edges are blended."""
    return sum(1 for p in pixels if _close(p, colour)) / len(pixels)


def _pixels(image, rect):
    # Shrunk by a pixel on each side: anti-aliased edges blend colours.
    box = (int(rect['x']) + 1, int(rect['y']) + 1,
           int(rect['x'] + rect['width']) - 1,
           int(rect['y'] + rect['height']) - 1)
    return list(image.crop(box).convert('RGB').getdata())


class BrowserTest(helpers.SeleniumAdminTestCase,
                  static_testing.StaticLiveServerTestCase):
    """Horizon's Selenium admin case, on our headless Chromium."""

    @classmethod
    def setUpClass(cls):
        missing = _browser_missing()
        if missing:
            # CI sets NUMA_POLICY_REQUIRE_BROWSER so a lost browser fails.
            if os.environ.get('NUMA_POLICY_REQUIRE_BROWSER'):
                raise RuntimeError(missing)
            raise unittest.SkipTest(missing)
        # Horizon's base only starts its own (Firefox) driver when
        # WITH_SELENIUM is set; it is not, and ours is started here.
        os.environ.pop('WITH_SELENIUM', None)
        super().setUpClass()
        cls._profile = tempfile.mkdtemp(prefix='numa-chromium-')
        cls.selenium = _make_driver(cls._profile)

    @classmethod
    def tearDownClass(cls):
        cls.selenium.quit()
        shutil.rmtree(cls._profile, ignore_errors=True)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.api = base.ServedApi('admin').start()
        self.addCleanup(self.api.stop)
        self.api.fill()
        os.makedirs(ARTIFACTS, exist_ok=True)

    def _open(self, path, ready_css):
        self.selenium.get(self.live_server_url + path)
        ui.WebDriverWait(self.selenium, 60).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ready_css))

    def _viewport_rect(self, element):
        """Where the element is in the screenshot (the viewport)."""
        return self.selenium.execute_script(
            'var r = arguments[0].getBoundingClientRect();'
            'return {x: r.left, y: r.top, width: r.width, height: r.height};',
            element)

    def _screenshot(self, path):
        png = self.selenium.get_screenshot_as_png()
        with open(path, 'wb') as out:
            out.write(png)
        return Image.open(io.BytesIO(png))

    def test_hosts_table_shows_coloured_load_bars(self):
        self._open('/admin/numa_policy/', '#hosts tbody .numa-fill')
        rows = self.selenium.find_elements(By.CSS_SELECTOR,
                                           '#hosts tbody tr')
        self.assertEqual(2, len(rows))
        hot = self.selenium.find_element(
            By.CSS_SELECTOR, '#hosts .numa-node[data-node="1"] .numa-hot')
        quiet = self.selenium.find_element(
            By.CSS_SELECTOR, '#hosts .numa-node[data-node="0"] .numa-ok')
        self.selenium.execute_script(
            'arguments[0].scrollIntoView({block: "center"});', hot)
        image = self._screenshot(INDEX_PNG)
        hot_rect = self._viewport_rect(hot)
        self.assertGreater(hot_rect['width'], 100,
                           'a 92 % bar of a 120 px track')
        hot_pixels = _pixels(image, hot_rect)
        self.assertGreater(_share(hot_pixels, HOT_RED), 0.9,
                           f'hot bar not red: {hot_pixels[:3]}')
        quiet_pixels = _pixels(image, self._viewport_rect(quiet))
        self.assertGreater(_share(quiet_pixels, OK_GREEN), 0.9,
                           f'quiet bar not green: {quiet_pixels[:3]}')
        self.assertGreater(len(self.selenium.find_elements(
            By.CSS_SELECTOR, '#instances tbody tr')), 2)

    def test_host_detail_draws_the_history_charts(self):
        self._open('/admin/numa_policy/hosts/compute-1/',
                   '#numa-charts[data-drawn] svg')
        charts = self.selenium.find_elements(By.CSS_SELECTOR,
                                             '#numa-charts .numa-chart')
        self.assertEqual(3, len(charts))
        self.assertEqual(2, len(self.selenium.find_elements(
            By.CSS_SELECTOR, '#numa-charts polyline.numa-line')))
        self.assertTrue(self.selenium.find_elements(
            By.CSS_SELECTOR, '#numa-charts rect.numa-out-failed'))
        self.selenium.execute_script(
            'arguments[0].scrollIntoView({block: "center"});', charts[0])
        image = self._screenshot(DETAIL_PNG)
        svg = charts[0].find_element(By.TAG_NAME, 'svg')
        pixels = _pixels(image, self._viewport_rect(svg))
        blue = sum(1 for p in pixels if _close(p, LINE_BLUE, 40))
        self.assertGreater(blue, 100, 'the delay line is not drawn')
        painted = sum(1 for p in pixels if p != (255, 255, 255))
        self.assertGreater(painted / len(pixels), 0.01)
