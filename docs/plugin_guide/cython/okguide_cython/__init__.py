"""Plugin guide example: the pseudo-Huber loss and exponential features, compiled."""
