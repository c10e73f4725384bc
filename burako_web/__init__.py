"""burako-web: the project's games on a web table (Starlette + uvicorn, WebSockets).

    burako-web                      # serves http://127.0.0.1:8000 and opens it

Layout:

| module        | what it owns                                                              |
|---------------|---------------------------------------------------------------------------|
| ``games``     | the table-game interface (:class:`games.TableGame`) and the Burako adapter: |
|               | what one seat may see (E2), its legal moves, replay frames                |
| ``match``     | a match at one table (B28): seats, deals, bots, records; no web code      |
| ``app``       | the Starlette app: rooms, WebSockets, limits, replays                     |
| ``cli``       | the ``burako-web`` command                                                |
| ``testing``   | a live server in a thread, and a person's clicks (tests, the screenshot)  |
| ``static/``   | the one page (plain HTML, CSS, JavaScript; nothing fetched at run time)   |

The core package (``burako_env``) never imports this one, so the env does not
depend on the web stack (``pip install burako-env[web]``).
"""
