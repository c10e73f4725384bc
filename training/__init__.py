"""Self-play training, evaluation and tournaments (burako-train, burako-eval, burako-tournament).

Importing the package first makes OpenMP's waiting threads sleep (:mod:`training.openmp`).
"""

from training.openmp import sleep_while_waiting

sleep_while_waiting()
