"""The cost example of docs/cost.md (the seed guide's real bill): $3.4828/h, a 250 GB disk at
$0.20 per GB-month, $1.00 to rebuild; it gives stopped $0.0694/h and break-even 14.4 h.
PRICE_FLAGS are read from the doc's `rgpu-tui cost --price-per-hour ...` line: the tests that
use them run the example as the doc shows it, and check the numbers it gives."""

import re

from support.docs import doc

_EXAMPLE = re.search(r"^rgpu-tui cost (--price-per-hour .*)$", doc("cost.md"), re.MULTILINE)
assert _EXAMPLE is not None, "docs/cost.md has no `rgpu-tui cost --price-per-hour ...` line"
PRICE_FLAGS = tuple(_EXAMPLE.group(1).split())

# the keys `rgpu-tui cost --json` documents
COST_JSON_KEYS = (
    "configured price_per_hour billing_started_at billed_hours spent run_spent per_epoch "
    "to_finish projected_total stopped_per_hour break_even_hours stop_saving_percent "
    "idle_seconds idle_spent balance_left balance_runs_out_at warnings"
).split()
