"""icml26: working implementations and honest reproductions of 28 ICML 2026 methods.

Each paper lives in its own subpackage, ``icml26.<group>.<slug>``, with a practitioner's API and a
``reproduce.py`` that states the paper's claims and measures them against the baseline the paper beats.
``icml26.registry`` lists the papers; ``icml26 reproduce`` runs the claims and writes result cards and a report.

Importing ``icml26`` is cheap: it imports neither torch nor matplotlib.
"""

__version__ = "0.1.0"
