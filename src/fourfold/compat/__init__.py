"""Other memory layers' APIs over fourfold, so code written for them runs unchanged but for an import.

- `fourfold.compat.mem0.Memory`: Mem0's `Memory` (add, search, get, get_all, update, delete,
  delete_all, history, reset).
- `fourfold.compat.identity.Identity`: how `user_id`, `agent_id` and `run_id` map onto scopes.
"""

from fourfold.compat.identity import Identity

__all__ = ["Identity"]
