"""``burako-web``: serve the web table and open it in a browser.

    burako-web                         # http://127.0.0.1:8000, opened in your browser
    burako-web --port 8080 --no-open --records my-games/

The server listens on 127.0.0.1 unless ``--host`` says otherwise (to let
friends on your network join, ``--host 0.0.0.0``: rooms are open to anyone
who has the link).
"""

from __future__ import annotations

import argparse
import threading
import webbrowser
from pathlib import Path

from burako_web.app import Limits, create_app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="burako-web", description="Play Burako in the browser: bots, rooms, replays.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--records", default="web-records", help="folder for the JSON-lines record of every hand")
    parser.add_argument("--bot-delay", type=float, default=Limits.bot_delay, help="seconds between bot moves")
    parser.add_argument("--room-timeout", type=float, default=Limits.room_timeout, help="seconds an empty room lives")
    parser.add_argument("--max-rooms", type=int, default=Limits.max_rooms)
    parser.add_argument("--no-open", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535:
        parser.error(f"--port must be between 1 and 65535, got {args.port}")
    if Path(args.records).exists() and not Path(args.records).is_dir():
        parser.error(f"--records {args.records!r} is a file; name a folder for the records (it is created if missing)")
    try:
        limits = Limits(bot_delay=args.bot_delay, room_timeout=args.room_timeout, max_rooms=args.max_rooms)
    except ValueError as exc:
        parser.error(str(exc).replace("bad web limits: ", "").replace("_", "-"))
    import uvicorn

    app = create_app(limits, records_dir=args.records)
    url = f"http://{args.host}:{args.port}/"
    print(f"burako-web: the table is at {url} (records in {args.records}/); Ctrl-C stops it")
    if not args.no_open:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=args.host, port=args.port, ws_max_size=64 * 1024, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
