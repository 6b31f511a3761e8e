"""Plugin guide example: pure-Python loss and feature map (see ``plugin.py``)."""
