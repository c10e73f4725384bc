"""Take the README's screenshot of the web table (docs/web/table.png).

    .venv/bin/python scripts/web_screenshot.py [--out docs/web/table.png] [--seed 2028] [--moves 30]

Starts the server on 127.0.0.1, opens a room against the shipped bot in
headless chromium (Debian's, /usr/bin/chromium), clicks ``--moves`` moves of
the person, then selects a tile and photographs the table.
"""

from __future__ import annotations

import argparse
import tempfile

from playwright.sync_api import sync_playwright

from burako_web.app import Limits
from burako_web.testing import CHROMIUM, CHROMIUM_ARGS, click_one_move, serve, state_of, wait_my_turn_or_end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/web/table.png")
    parser.add_argument("--seed", type=int, default=2028)
    parser.add_argument("--moves", type=int, default=30)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as records,
        serve(Limits(bot_delay=0.01, rate=500, burst=500), records_dir=records, seed=args.seed) as live,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.goto(live.url)
        page.wait_for_selector("#f-seat-1")
        page.click("#f-create")
        for _ in range(args.moves):
            msg = wait_my_turn_or_end(page)
            if msg["status"] != "playing":
                break
            click_one_move(page, take_pile=False)
            page.wait_for_function(f"window.burako.msg.step !== {msg['step']}")
        # stop on the person's play phase with one tile selected, its additions highlighted
        while True:
            msg = wait_my_turn_or_end(page)
            if msg["status"] != "playing" or msg["view"]["phase"] == "PLAY":
                break
            click_one_move(page)
            page.wait_for_function(f"window.burako.msg.step !== {msg['step']}")
        msg = state_of(page)
        adds = [m for m in msg["legal"] if m["kind"] == "add"]
        if adds:
            index = msg["view"]["hand"].index(adds[0]["tiles"][0])
            page.click(f"#hand .tile[data-index='{index}']")
        page.wait_for_timeout(200)
        page.screenshot(path=args.out)
        browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
