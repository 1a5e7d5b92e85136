"""The README's cost example (the seed guide's real bill): $3.4828/h, a 250 GB disk at
$0.20 per GB-month, $1.00 to rebuild; it gives stopped $0.0694/h and break-even 14.4 h."""

PRICE_FLAGS = (
    "--price-per-hour",
    "3.4828",
    "--disk-gb",
    "250",
    "--storage-price-gb-month",
    "0.20",
    "--rebuild-cost",
    "1.00",
)
# the keys `rgpu-tui cost --json` documents
COST_JSON_KEYS = (
    "configured price_per_hour billing_started_at billed_hours spent run_spent per_epoch "
    "to_finish projected_total stopped_per_hour break_even_hours stop_saving_percent "
    "idle_seconds idle_spent balance_left balance_runs_out_at warnings"
).split()
