"""The static leaderboard site (:mod:`.pages`: the pages and their install; :mod:`.html`: the
index's HTML pieces; :mod:`.check`: the board's shape, checked before a page is written;
``assets/``: the style sheet and the column sorting)."""
