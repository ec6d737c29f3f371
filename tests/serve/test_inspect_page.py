"""GET /inspect in a real headless browser: Debian's `chromium` driven by selenium through its
`chromedriver` (the Makefile's test set-up installs both), against a real server around the
embedded model. Screenshots are kept under test-artifacts/inspect/ (gitignored)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from tests.models import weather_schema
from tests.serve.conftest import API_KEY as KEY

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

ARTIFACTS = Path("test-artifacts/inspect")


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1500,1100"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def run_example(driver, name: str, timeout: float = 120) -> None:
    """Pick the example named `name` and press Run; return once the page has the answer."""
    Select(driver.find_element(By.ID, "example")).select_by_visible_text(name)
    before = driver.execute_script("return document.body.dataset.done || ''")
    driver.find_element(By.ID, "run").click()
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.done || ''") != before)


def shot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000
    return path


def test_the_page_loads_and_an_example_runs(browser, base_url, server):
    browser.get(base_url + "/inspect")
    assert browser.title == "strictgen inspect"
    assert browser.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)") == []  # nothing else loaded
    run_example(browser, "Weather report: a valid document")
    doc = browser.find_element(By.ID, "input").get_attribute("value")
    tokens = server.pool.tokenize(lambda m: m.tokenize(doc))
    rows = browser.find_elements(By.CSS_SELECTOR, "#steps tbody tr.step")
    assert len(rows) == len(tokens) + 1  # a row per token of the model's tokenization, then the end
    answer = httpx.post(base_url + "/v1/strictgen/inspect", json={"format": {"type": "json_schema", "schema": weather_schema()}, "document": doc}).json()
    assert [r.find_element(By.CSS_SELECTOR, "td.allowed").text for r in rows] == [str(s["allowed"]) for s in answer["steps"]]
    assert "Valid" in browser.find_element(By.ID, "summary").text
    shot(browser, "valid-document")


def test_an_off_format_document_is_marked(browser, base_url):
    browser.get(base_url + "/inspect")
    run_example(browser, "Weather report: a document that leaves the format")
    doc = browser.find_element(By.ID, "input").get_attribute("value")
    summary = browser.find_element(By.ID, "summary").text
    assert f"byte {doc.encode().index(b'.')}: found '.5" in summary and "expected ',', '0-9'" in summary
    refused = browser.find_elements(By.CSS_SELECTOR, "#steps tbody tr.refused")
    assert len(refused) == 1 and refused[0] == browser.find_elements(By.CSS_SELECTOR, "#steps tbody tr.step")[-1]
    assert browser.find_element(By.CSS_SELECTOR, "#text-view mark.departure").text.startswith(".")
    shot(browser, "off-format-document")


def test_an_invalid_schema_shows_its_pointer(browser, base_url):
    browser.get(base_url + "/inspect")
    run_example(browser, "Invalid schema (multipleOf 0)")
    assert browser.find_element(By.ID, "error").is_displayed()
    assert browser.find_element(By.ID, "error-type").text == "SchemaError"
    assert browser.find_element(By.ID, "error-keyword").text == "multipleOf"
    assert browser.find_element(By.ID, "error-pointer").text == "/properties/price/multipleOf"
    assert browser.find_element(By.ID, "error-mark").text == '"multipleOf": 0'  # the member it names, marked in the schema
    source = browser.find_element(By.ID, "format-source")
    start, end = browser.execute_script("return [arguments[0].selectionStart, arguments[0].selectionEnd]", source)
    assert source.get_attribute("value")[start:end] == '"multipleOf": 0'
    assert not browser.find_element(By.ID, "steps").is_displayed()
    shot(browser, "invalid-schema")


@pytest.mark.slow  # a generation of ~27 tokens: 35 s on 2 busy cores
def test_the_model_answers_step_by_step(browser, base_url):
    browser.get(base_url + "/inspect")
    browser.find_element(By.ID, "max-tokens").clear()
    browser.find_element(By.ID, "max-tokens").send_keys("48")
    run_example(browser, "Weather report: the model answers", timeout=300)
    rows = browser.find_elements(By.CSS_SELECTOR, "#steps tbody tr.step")
    hows = [r.find_elements(By.TAG_NAME, "td")[6].text for r in rows]  # sampled or forced
    assert "sampled" in hows and "forced" in hows
    sampled = rows[hows.index("sampled")].find_elements(By.TAG_NAME, "td")
    assert "0." in sampled[7].text or "1.00" in sampled[7].text  # the model's top tokens, with probabilities
    assert "Valid" in browser.find_element(By.ID, "summary").text
    shot(browser, "model-answers")


def test_the_page_obeys_the_api_keys(browser, keyed_base_url):
    browser.get(keyed_base_url + "/inspect")
    assert "invalid_api_key" in browser.page_source and not browser.find_elements(By.ID, "run")
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Bearer {KEY}"}})
    try:
        browser.get(keyed_base_url + "/inspect")
        assert browser.title == "strictgen inspect"
        browser.find_element(By.ID, "api-key").send_keys(KEY)  # the page's own calls carry the key it is given
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
        run_example(browser, "Date regex")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#steps tbody tr.step")) >= 2
        browser.find_element(By.ID, "api-key").clear()
        run_example(browser, "Date regex")
        assert browser.find_element(By.ID, "error-message").text.startswith("no API key")
    finally:
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
