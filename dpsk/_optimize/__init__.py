"""Certified solvers and the losses they minimise (private to dpsk).

One job: return a point within a certified distance of the exact minimiser of a
strongly convex regularised loss, so that the privacy proofs about the exact
minimiser apply. ``_losses`` holds the losses and their constants; ``_solver``
the certified objective and the solve loop shared by every solver; ``_binary``
the binary problem's entry point, in memory or by blocks (``_block_solver``);
``_multinomial_solver``, ``_robust_solver`` and ``_tilted_solver`` the softmax,
robust and tilted problems; ``_solution_cache`` lets the utility curves reuse a
solve. Nothing here draws noise or spends budget; it imports only
:mod:`dpsk._data`.
"""
