"""The chat page at / in a real browser: headless Chromium (Debian's chromium and
chromium-driver) driven by selenium. It opens /, takes the API key once, streams an
answer token by token, stops a long answer (the server's running requests drop to 0),
switches model, keeps the conversation across a reload, and saves a screenshot."""
import os
import pathlib
import re
import time

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import ROOT, run, start_server

API_KEY = "page-test-key"
ARTIFACTS = pathlib.Path(os.environ.get("TOKENMILL_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))


@pytest.fixture(scope="module")
def page_server(tokenmill, default_model, tmp_path_factory):
    store = tmp_path_factory.mktemp("page-store") / "store"
    assert run([tokenmill, "import", default_model, "gemma3:270m", "--link", "--models-dir", str(store)]).returncode == 0
    assert run([tokenmill, "cp", "gemma3:270m", "gemma3:second", "--models-dir", str(store)]).returncode == 0
    process = start_server(tokenmill, None, "--models-dir", str(store), "-t", "2", "--api-key", API_KEY)
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"]:
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    yield driver
    driver.quit()


def running(server):
    text = requests.get(server.url + "/metrics", headers={"Authorization": f"Bearer {API_KEY}"}).text
    return sum(float(v) for v in re.findall(r"^tokenmill_requests_running\{[^}]*\} (\S+)$", text, re.M))


def last_answer(driver):
    return driver.execute_script("""
        const all = document.querySelectorAll('.message.assistant, .message.error');
        if (!all.length) return null;
        const m = all[all.length - 1];
        const stats = m.querySelector('.stats');
        return {text: m.querySelector('.text').textContent, stats: stats ? stats.textContent : null,
                error: m.classList.contains('error')};""")


def send(driver, text):
    box = driver.find_element(By.ID, "input")
    box.clear()
    box.send_keys(text)
    driver.find_element(By.ID, "send").click()


def wait_done(driver, seconds=60):
    WebDriverWait(driver, seconds).until(lambda d: (last_answer(d) or {}).get("stats") or (last_answer(d) or {}).get("error"))
    return last_answer(driver)


def test_chat_page_in_a_browser(page_server, browser):
    plain = requests.get(page_server.url + "/")
    assert plain.text == "tokenmill is running", "clients that do not ask for HTML get the heartbeat"
    browser.get(page_server.url + "/")
    WebDriverWait(browser, 10).until(lambda d: "API key" in d.find_element(By.ID, "status").text)
    key = browser.find_element(By.ID, "api_key")
    key.send_keys(API_KEY)
    browser.find_element(By.ID, "system").click()  # leaving the field saves the key and loads the models
    WebDriverWait(browser, 10).until(lambda d: len(Select(d.find_element(By.ID, "model")).options) == 2)
    assert [o.text for o in Select(browser.find_element(By.ID, "model")).options] == ["gemma3:270m", "gemma3:second"]

    # An answer streamed token by token: the text grows in several steps before it ends.
    browser.find_element(By.ID, "temperature").clear()
    browser.find_element(By.ID, "temperature").send_keys("0")
    browser.find_element(By.ID, "max_tokens").clear()
    browser.find_element(By.ID, "max_tokens").send_keys("120")
    send(browser, "Write a short poem about the sea.")
    lengths = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = last_answer(browser)
        if answer and answer["text"] and (not lengths or len(answer["text"]) != lengths[-1]):
            lengths.append(len(answer["text"]))
        if answer and answer["stats"]:
            break
        time.sleep(0.005)
    answer = last_answer(browser)
    assert not answer["error"], answer
    assert len(lengths) >= 3 and lengths == sorted(lengths), lengths
    assert re.search(r"TTFT \d+\.\d\d s · \d+ tokens · [\d.]+ tok/s", answer["stats"]), answer["stats"]

    # A long answer stopped with the button: the server drops the request.
    browser.find_element(By.ID, "max_tokens").clear()
    browser.find_element(By.ID, "max_tokens").send_keys("4000")
    send(browser, "Tell a very long story about a dragon, chapter by chapter.")
    WebDriverWait(browser, 30).until(lambda d: len((last_answer(d) or {}).get("text") or "") > 20)
    assert running(page_server) == 1
    browser.find_element(By.ID, "stop").click()
    answer = wait_done(browser)
    assert "stopped" in answer["stats"]
    deadline = time.monotonic() + 10
    while running(page_server) != 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running(page_server) == 0

    # Another model: the request goes to it (and loads it).
    Select(browser.find_element(By.ID, "model")).select_by_visible_text("gemma3:second")
    browser.find_element(By.ID, "max_tokens").clear()
    browser.find_element(By.ID, "max_tokens").send_keys("16")
    send(browser, "Hello!")
    answer = wait_done(browser)
    assert not answer["error"] and answer["text"], answer
    ps = requests.get(page_server.url + "/api/ps", headers={"Authorization": f"Bearer {API_KEY}"}).json()
    assert "gemma3:second" in [m["model"] for m in ps["models"]]

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "chat_page.png"))

    # The conversation lives in the browser: a reload shows it again, key and all.
    count = len(browser.find_elements(By.CSS_SELECTOR, ".message"))
    browser.refresh()
    WebDriverWait(browser, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".message")) == count)
    WebDriverWait(browser, 10).until(lambda d: len(Select(d.find_element(By.ID, "model")).options) == 2)
    assert Select(browser.find_element(By.ID, "model")).first_selected_option.text == "gemma3:second"


def test_no_webui_serves_text_only(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "2", "--no-webui")
    try:
        answer = requests.get(process.url + "/", headers={"Accept": "text/html"})
        assert answer.headers["Content-Type"].startswith("text/plain") and answer.text == "tokenmill is running"
    finally:
        assert process.stop() == 0
