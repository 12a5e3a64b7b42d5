"""Following a running job: its files tailed as the producer writes them (``tail.py``)."""
