"""The to-do application in a real browser: headless Chromium, driven
through chromedriver by Selenium, against a server started from a command.

    python3 test/browser/browser_test.py [--timeout S] [--http2] -- COMMAND [ARG...]

runs COMMAND ARG... --port N --data DIR (N a free port, DIR a fresh
temporary directory, removed afterwards), waits until the port accepts,
then, in one browser (one profile, so both tabs share the cookies):

  tab 1: / while logged out is /login; /signup signs a user up, which logs
         them in and lands on /; after the cookies are dropped, /login logs
         the same user in again;
  tab 2: / is opened, and its page opens a WebSocket;
  tab 1: adds an item through the form #add; tab 1 and tab 2 list it in
         #items, tab 2 without reloading;
  tab 1: adds <img src=x onerror=alert(1)>: both tabs show it as text, no
         img element exists and no alert was raised.

With --http2, the command also gets --https-port M, and the browser goes to
https://127.0.0.1:M instead (the server's development certificate, not
trusted: --ignore-certificate-errors), where every page must have come over
HTTP/2 (ALPN h2: the Navigation Timing entry's nextHopProtocol is "h2"). The
WebSocket may use a connection of its own over HTTP/1.1.

Every wait is explicit and bounded (--timeout, 10 s by default); the server
and the browser are stopped, and the temporary directories removed, whatever
happens. Exits 0 if all passed, 1 otherwise (saying why, with the page and
the server's output), 2 if Chromium, chromedriver or Selenium is missing.

The page contract (what the server must serve):
  GET /signup: a form with inputs name="username", name="password" and a
    submit button id="signup"; submitting logs the new user in and
    redirects to /.
  GET /login: the same inputs, submit button id="login".
  GET / when logged out redirects to /login; when logged in it has
    <ul id="items"> with one <li> per item (its text the title, or that of
    its element of class "title" when it holds more, as buttons), a form
    id="add" with an input name="title" and a submit button, and its own
    script opens a WebSocket and appends an <li> for each item added
    elsewhere.

Why Selenium rather than the DevTools protocol by hand: explicit waits,
tabs, form input and alerts are Selenium's own, and chromedriver starts and
stops the browser and its profile; the DevTools protocol is still used
through it, for the one thing WebDriver lacks (a script that runs before a
page's own, see INSTRUMENT).
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SETUP_HINT = "run `make setup` (Debian: apt-get install chromium chromium-driver python3-selenium)"

# Debian installs Selenium for the system's Python: an interpreter earlier
# in PATH (pyenv, a virtualenv) may lack it, so the test reruns itself there.
SYSTEM_PYTHON = "/usr/bin/python3"

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    if os.path.exists(SYSTEM_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) \
            and os.environ.get("BROWSER_TEST_REEXEC") != "1":
        os.environ["BROWSER_TEST_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
    print(f"browser-test: FAILED: Python's selenium is missing; {SETUP_HINT}", file=sys.stderr)
    sys.exit(2)

HOSTILE_TITLE = "<img src=x onerror=alert(1)>"

# Runs in every page of a tab before the page's own scripts (installed with
# the DevTools protocol's Page.addScriptToEvaluateOnNewDocument): it counts
# the WebSockets that opened, so that the item is added only once tab 2 can
# hear of it (otherwise the test would race the page's script), and records
# alert() calls instead of blocking the page on a dialog.
INSTRUMENT = """
window.__openSockets = 0;
window.__alerts = [];
window.alert = (message) => { window.__alerts.push(String(message)); };
const NativeWebSocket = window.WebSocket;
window.WebSocket = function (...args) {
  const socket = new NativeWebSocket(...args);
  socket.addEventListener("open", () => { window.__openSockets += 1; });
  socket.addEventListener("close", () => { window.__openSockets -= 1; });
  return socket;
};
window.WebSocket.prototype = NativeWebSocket.prototype;
Object.assign(window.WebSocket, NativeWebSocket);
"""

START = time.monotonic()


def say(message):
    print(f"browser-test: [{time.monotonic() - START:5.2f}s] {message}", flush=True)


class Failure(Exception):
    pass


def find_program(names, extra_paths=()):
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    for path in extra_paths:
        if os.access(path, os.X_OK):
            return path
    return None


def free_port():
    # The kernel chooses a port that is free now; the server binds it a
    # moment later. Another process taking it meanwhile is unlikely on a
    # test machine, and fails the test visibly (the server cannot bind).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(command, port, https_port, data_dir, log_path, timeout):
    # A program named by a path relative to here (dune's %{exe:...} gives
    # "stand_in.exe") is run as that file, not looked up in PATH.
    program = os.path.abspath(command[0]) if os.path.isfile(command[0]) else command[0]
    argv = [program] + command[1:] + ["--port", str(port), "--data", data_dir]
    if https_port is not None:
        argv += ["--https-port", str(https_port)]
    # The last port opened: the HTTPS one when there is one (it is set up
    # after the certificate is made, which takes longer).
    port = https_port if https_port is not None else port
    say(f"starting {' '.join(argv)}")
    log = open(log_path, "wb")
    # A session of its own, so that stopping it reaches whatever it forked.
    try:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
    except OSError as e:
        raise Failure(f"cannot run the server: {e}") from None
    finally:
        log.close()
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            raise Failure(f"the server exited with status {server.returncode} before accepting on port {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise Failure(f"the server did not accept on port {port} within {timeout} s")
        time.sleep(0.05)  # polling the port, not an assertion


def stop_server(server):
    # SIGTERM (a graceful stop) to the server's session, which also reaches
    # what a wrapper (dune exec, a shell) started; SIGKILL to whatever is
    # left of it after 5 s.
    def signal_group(sig):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            pass

    signal_group(signal.SIGTERM)
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        say("the server did not stop within 5 s of SIGTERM: killing it")
    signal_group(signal.SIGKILL)
    server.wait()


def start_browser(chromium, chromedriver, profile_dir, https):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    arguments = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                 f"--user-data-dir={profile_dir}", "--window-size=1024,768"]
    if https:
        # The server's development certificate is made for the test, and
        # trusting it would mean changing the system's or the profile's NSS
        # store; the protocol, not the trust chain, is what is tested here.
        arguments.append("--ignore-certificate-errors")
    for argument in arguments:
        options.add_argument(argument)
    # Selenium 4.10 renamed log_path (Debian 12 has 4.8, Debian 13 4.24).
    if "log_output" in Service.__init__.__code__.co_varnames:
        service = Service(executable_path=chromedriver, log_output=subprocess.DEVNULL)
    else:
        service = Service(executable_path=chromedriver, log_path=os.devnull)
    return webdriver.Chrome(service=service, options=options)


class Tab:
    """One tab of the browser: Selenium acts on the tab it switched to last."""

    def __init__(self, driver, name, handle, base, timeout, protocol):
        self.driver, self.name, self.handle = driver, name, handle
        self.base, self.timeout, self.protocol = base, timeout, protocol

    def use(self):
        if self.driver.current_window_handle != self.handle:
            self.driver.switch_to.window(self.handle)
        return self.driver

    def instrument(self):
        self.use().execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": INSTRUMENT})

    def open(self, path):
        self.use().get(self.base + path)

    def path(self):
        return self.use().execute_script("return location.pathname")

    def wait(self, what, condition):
        driver = self.use()
        try:
            return WebDriverWait(driver, self.timeout, poll_frequency=0.05).until(lambda d: condition(d))
        except TimeoutException:
            raise Failure(f"{self.name}: {what}, not within {self.timeout} s "
                          f"(at {driver.current_url})\n--- the page:\n{page_source(driver)}") from None

    def wait_for_path(self, path):
        self.wait(f"expected to be at {path}", lambda d: d.execute_script("return location.pathname") == path
                  and d.execute_script("return document.readyState") == "complete")
        if self.protocol is not None:
            got = self.use().execute_script(
                "const n = performance.getEntriesByType('navigation')[0]; return n ? n.nextHopProtocol : null")
            if got != self.protocol:
                raise Failure(f"{self.name}: {path} came over {got!r}, not {self.protocol!r}")

    def element(self, css):
        found = self.use().find_elements(By.CSS_SELECTOR, css)
        if not found:
            raise Failure(f"{self.name}: no element {css} at {self.path()}\n--- the page:\n"
                          f"{page_source(self.driver)}")
        return found[0]

    def submit(self, form_css, fields, button_css):
        for name, value in fields.items():
            field = self.element(f'{form_css} [name="{name}"]')
            field.clear()
            field.send_keys(value)
        self.element(button_css).click()

    def item_texts(self):
        return self.use().execute_script(
            "const list = document.getElementById('items');"
            "return list ? Array.from(list.querySelectorAll('li'), li => (li.querySelector('.title') || li).textContent.trim()) : null;")

    def wait_for_item(self, title):
        # Markup or a script run from a title fails at once, not at the end
        # of the wait (the title then never shows as text).
        def listed(_driver):
            self.check_no_script_ran()
            return title in (self.item_texts() or [])

        self.wait(f"#items does not list {title!r}", listed)

    def check_no_script_ran(self):
        driver = self.use()
        images = driver.execute_script("return Array.from(document.images, i => i.outerHTML)")
        if images:
            raise Failure(f"{self.name}: the hostile title became markup: {images}")
        alerts = driver.execute_script("return window.__alerts || []")
        if alerts:
            raise Failure(f"{self.name}: alert() was called with {alerts}")


def page_source(driver):
    try:
        return driver.page_source[:4000]
    except WebDriverException as e:
        return f"(unavailable: {e.msg})"


def scenario(driver, base, timeout, protocol):
    tab1 = Tab(driver, "tab 1", driver.current_window_handle, base, timeout, protocol)
    tab1.instrument()

    say("tab 1: / while logged out")
    tab1.open("/")
    tab1.wait_for_path("/login")

    say("tab 1: sign up")
    user, password = "ada", "correct horse battery staple"
    tab1.open("/signup")
    tab1.submit("form", {"username": user, "password": password}, "#signup")
    tab1.wait_for_path("/")
    tab1.element("#items")

    say("tab 1: log out (cookies dropped), then log in")
    driver.delete_all_cookies()
    tab1.open("/")
    tab1.wait_for_path("/login")
    tab1.submit("form", {"username": user, "password": password}, "#login")
    tab1.wait_for_path("/")

    say("tab 2: / with the same cookies")
    driver.switch_to.new_window("tab")
    tab2 = Tab(driver, "tab 2", driver.current_window_handle, base, timeout, protocol)
    tab2.instrument()
    tab2.open("/")
    tab2.wait_for_path("/")
    tab2.element("#items")
    tab2.wait("its page opened no WebSocket", lambda d: d.execute_script("return window.__openSockets") > 0)
    # Gone if tab 2 reloads: it must append what it is sent, not refetch.
    tab2.use().execute_script("window.__sameDocument = true")

    for title in ["buy milk " + str(os.getpid()), HOSTILE_TITLE]:
        say(f"tab 1: add {title!r}")
        tab1.submit("#add", {"title": title}, "#add [type=submit], #add button:not([type])")
        tab1.wait_for_item(title)
        added = time.monotonic()
        tab2.wait_for_item(title)
        say(f"tab 2: shows {title!r} ({(time.monotonic() - added) * 1000:.0f} ms after tab 1 listed it)")

    if tab2.use().execute_script("return window.__sameDocument") is not True:
        raise Failure("tab 2 reloaded instead of appending the items it was sent")
    for tab in [tab1, tab2]:
        tab.check_no_script_ran()
    say("no img element and no alert in either tab")


def main():
    parser = argparse.ArgumentParser(description="The to-do application in headless Chromium.")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds for each wait (default 10)")
    parser.add_argument("--http2", action="store_true",
                        help="browse over HTTPS (--https-port) and require every page to come over HTTP/2")
    parser.add_argument("command", nargs="+", help="the server command; --port N --data DIR are appended")
    args = parser.parse_args()

    chromium = find_program(["chromium", "chromium-browser", "google-chrome"])
    chromedriver = find_program(["chromedriver"], ["/usr/lib/chromium/chromedriver"])
    missing = [name for name, path in [("chromium", chromium), ("chromedriver", chromedriver)] if path is None]
    if missing:
        print(f"browser-test: FAILED: {' and '.join(missing)} not found; {SETUP_HINT}", file=sys.stderr)
        return 2

    # SIGTERM (dune, CI) unwinds like Ctrl-C, so that the cleanup below runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    work = tempfile.mkdtemp(prefix="braid-browser-test.")
    data_dir, profile_dir = os.path.join(work, "data"), os.path.join(work, "profile")
    os.mkdir(data_dir)
    os.mkdir(profile_dir)
    log_path = os.path.join(work, "server.log")
    server = driver = None
    try:
        port = free_port()
        https_port = free_port() if args.http2 else None
        server = start_server(args.command, port, https_port, data_dir, log_path, args.timeout)
        base = f"https://127.0.0.1:{https_port}" if args.http2 else f"http://127.0.0.1:{port}"
        say(f"server accepting at {base}; starting {chromium}")
        driver = start_browser(chromium, chromedriver, profile_dir, args.http2)
        say(f"browser {driver.capabilities.get('browserVersion', '?')} ready")
        scenario(driver, base, args.timeout, "h2" if args.http2 else None)
        say("passed")
        return 0
    except (Failure, WebDriverException) as e:
        print(f"browser-test: FAILED: {e}", file=sys.stderr)
        if os.path.exists(log_path):
            with open(log_path, errors="replace") as log:
                tail = log.read()[-4000:]
            print(f"--- the server's output (last 4000 bytes):\n{tail}", file=sys.stderr)
        return 1
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception as e:  # the browser may have died already
                say(f"stopping the browser: {e}")
        if server is not None:
            stop_server(server)
        shutil.rmtree(work, ignore_errors=True)
        say(f"cleaned up (total {time.monotonic() - START:.2f} s)")


if __name__ == "__main__":
    sys.exit(main())
