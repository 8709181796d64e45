# Adds up the --json summaries of the shards of one pmlin fuzz campaign:
#   jq -s -f deploy/sum.jq findings/summaries/*.json
# (deploy/README.md). Seeds are JSON strings, kept exact.
{shards: length, seeds: (map(.seed) | unique),
 runs: (map(.runs) | add), operations: (map(.operations) | add),
 crashes: (map(.crashes) | add), violations: (map(.violations) | add),
 undecided: (map(.undecided) | add), seconds: (map(.seconds) | max),
 findings: [.[] | select(.finding) | {shard, run: .finding.run, seed: .finding.seed, history: .finding.history}]}
