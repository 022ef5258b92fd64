"""Release decisions: deploy, A/B test or revise each prompt version, by the rubric's rules.

- summaries      a run's figures per version (counts, means, usage, cost, the judge's figures)
- hard_criteria  pass/fail checks on every stored reply, beside the graded metrics
- aggregates     what the rules read per version: decision scores, groups, fairness gaps
- latency, voice_budget   time to first token and speaking time, and their budget rules
- bootstrap, comparison   a version against its baseline, scenario by scenario
- head_to_head, pairwise_run   win rates from the pairwise judge, and judging a stored run
- coverage       how much of the scenario set a run scored, and why not all
- safety_evidence  which safety-relevant replies an admitted judge or a detector verified (the gate)
- rules          the decision rules themselves (`release_report`)
- stored_run     a run directory read for the release commands
- contracts      the aggregates, comparisons, decisions and report they produce
"""
