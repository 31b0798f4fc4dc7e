"""Screenshot of an alignment explorer page (``hf-bahdanau-explore``) in headless chromium, for the README.

    hf-bahdanau-explore outputs/dates-rnnsearch --input training/data/dates/test.jsonl --output dates.html
    python -m training.explorer_screenshot dates.html dates.png --hover

Needs selenium (``pip install selenium``, in the dev extra) and chromium with its driver (Debian:
``apt-get install chromium chromium-driver``). ``headless_chromium`` is also what tests/test_explore.py drives.
"""

import argparse
import shutil
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "pip install selenium; apt-get install chromium chromium-driver"
HOVER_TIMEOUT = 10  # seconds to wait for the page to highlight the hovered token
PAGE_TIMEOUT = 30  # seconds to wait for the page to load
ATTEMPTS = 3  # fresh browsers to try when chromedriver times out on a busy machine


class BrowserMissing(RuntimeError):
    """selenium, chromium or chromedriver is not installed."""


def headless_chromium(width: int = 1280, height: int = 900):
    """A selenium WebDriver of a headless chromium with a ``width`` x ``height`` window. Raises BrowserMissing, saying
    what to install, when selenium, chromium or chromedriver is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise BrowserMissing(f"selenium is not installed ({INSTALL_HINT}).") from None
    browser = next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        missing = " and ".join(name for name, path in (("chromium", browser), ("chromedriver", driver)) if path is None)
        raise BrowserMissing(f"{missing} not found on PATH ({INSTALL_HINT}).")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def screenshot(page: Path, output: Path, *, width: int = 1280, height: int = 900, hover: bool = False) -> None:
    """Open ``page`` from disk and save what the window shows as the PNG ``output``; with ``hover``, the mouse rests
    on the first output token of the first sentence (its source tokens shaded by their weights).

    A busy machine can make chromedriver give up on a page it is still attaching ("timeout from aborted by
    navigation"); the whole take is then repeated in a fresh browser, up to ``ATTEMPTS`` times."""
    from selenium.common.exceptions import TimeoutException

    for attempt in range(1, ATTEMPTS + 1):
        try:
            return take(page, output, width=width, height=height, hover=hover)
        except TimeoutException:
            if attempt == ATTEMPTS:
                raise


def take(page: Path, output: Path, *, width: int, height: int, hover: bool) -> None:
    """One try of ``screenshot`` in its own headless chromium."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser = headless_chromium(width, height)
    try:
        browser.get(page.resolve().as_uri())
        WebDriverWait(browser, PAGE_TIMEOUT).until(
            lambda _: browser.execute_script("return document.readyState") == "complete",
            f"the page did not finish loading within {PAGE_TIMEOUT} s")
        if hover:
            token = browser.find_element(By.CSS_SELECTOR, ".sentence .target-token")
            ActionChains(browser).move_to_element(token).perform()
            # The page's script marks the token "selected" and shades its source tokens when the browser delivers
            # the hover, which may come after perform() returns.
            WebDriverWait(browser, HOVER_TIMEOUT).until(lambda _: "selected" in token.get_attribute("class").split(),
                                                        f"the hovered output token was not highlighted within "
                                                        f"{HOVER_TIMEOUT} s")
        output.parent.mkdir(parents=True, exist_ok=True)
        if not browser.save_screenshot(str(output)):
            raise RuntimeError(f"chromium could not save a screenshot to {output}.")
    finally:
        browser.quit()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page", type=Path, help="a page written by hf-bahdanau-explore")
    parser.add_argument("output", type=Path, help="the PNG to write")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--hover", action="store_true", help="rest the mouse on the first output token")
    args = parser.parse_args(argv)
    if not args.page.is_file():
        parser.error(f"page {args.page}: no such file.")
    for name in ("width", "height"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive number of pixels, got {getattr(args, name)}.")
    try:
        screenshot(args.page, args.output, width=args.width, height=args.height, hover=args.hover)
    except BrowserMissing as error:
        raise SystemExit(f"explorer_screenshot.py: error: {error}") from None
    print(args.output)


if __name__ == "__main__":
    main()
