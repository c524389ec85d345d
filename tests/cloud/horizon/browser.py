"""Log in to Horizon as a user would and photograph our panel.

Run with the Horizon virtualenv's Python (it has selenium)::

    python tests/cloud/horizon/browser.py URL USER PASSWORD OUT_DIR

Headless Chromium and chromedriver (Debian's packages): the login form,
keystone behind it, then the panel's index (Admin, Compute, NUMA
placement) and each host's page. Prints, as JSON, the text each page
shows and where each screenshot went; exits nonzero with the page's text
when a step fails.
"""

import json
import os
import shutil
import sys
import tempfile

from selenium.common import exceptions
from selenium import webdriver
from selenium.webdriver.chrome import service as chrome_service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import ui

PANEL = '/admin/numa_policy/'
# The first page compiles Horizon's SCSS; the panel asks our API.
PAGE_TIMEOUT = 300
FLAGS = ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
         '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync',
         '--force-device-scale-factor=1', '--window-size=1600,1400')


def driver(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = (shutil.which('chromium')
                               or shutil.which('chromium-browser'))
    for flag in FLAGS + (f'--user-data-dir={profile}',):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=chrome_service.Service(
        executable_path=shutil.which('chromedriver')))
    browser.set_page_load_timeout(PAGE_TIMEOUT)
    return browser


def log_in(browser, url, user, password):
    browser.get(url + '/auth/login/')
    wait = ui.WebDriverWait(browser, PAGE_TIMEOUT)
    wait.until(lambda b: b.find_elements(By.ID, 'id_username'))
    browser.find_element(By.ID, 'id_username').send_keys(user)
    browser.find_element(By.ID, 'id_password').send_keys(password)
    browser.find_element(By.ID, 'loginBtn').click()
    wait.until(lambda b: '/auth/login' not in b.current_url)


def photograph(browser, url, path, table):
    """The page at ``url`` once its table ``table`` is there: its text."""
    browser.get(url)
    ui.WebDriverWait(browser, PAGE_TIMEOUT).until(
        lambda b: b.find_elements(By.ID, table))
    browser.save_screenshot(path)
    return browser.find_element(By.TAG_NAME, 'body').text


def main(argv):
    url, user, password, out_dir = argv
    os.makedirs(out_dir, exist_ok=True)
    profile = tempfile.mkdtemp(prefix='numa-cloud-chromium-')
    browser = driver(profile)
    seen = {'pages': {}}
    try:
        log_in(browser, url, user, password)
        index = os.path.join(out_dir, 'horizon-cloud-panel.png')
        seen['pages']['index'] = {
            'png': index,
            'text': photograph(browser, url + PANEL, index, 'hosts')}
        for link in browser.find_elements(By.CSS_SELECTOR,
                                          '#hosts a[href*="/hosts/"]'):
            seen.setdefault('host_urls', []).append(link.get_attribute(
                'href'))
        for number, host_url in enumerate(seen.get('host_urls', [])):
            path = os.path.join(out_dir, f'horizon-cloud-host-{number}.png')
            seen['pages'][host_url] = {
                'png': path,
                'text': photograph(browser, host_url, path,
                                   'host_instances')}
    except exceptions.WebDriverException as exc:
        body = browser.find_elements(By.TAG_NAME, 'body')
        print(f'{type(exc).__name__} at {browser.current_url}: '
              f'{exc.msg}\n{body[0].text if body else ""}', file=sys.stderr)
        return 1
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(seen))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
