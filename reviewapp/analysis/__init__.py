"""Statistics of the hypothesis benchmark for analysts who script (docs/protocol.md#statistics).

Pure functions over plain Python data (tuples, lists, dicts): no database access, so they work on an analyst's own
exports as well as on the product's. Every result is a frozen dataclass of plain values;
``dataclasses.asdict(result)`` is JSON-serialisable, with None where a statistic is undefined.

Intervals resample whole research tasks (10,000 resamples, percentile method, recorded seed; the index matrix is
documented in ``reviewapp.analysis._resampling``), and resamples where a statistic is undefined are counted.

    >>> from reviewapp import analysis
    >>> analysis.random_control(53, 25, 19).mean
    8.962264150943396
"""

from reviewapp.analysis._resampling import DEFAULT_RESAMPLES, DEFAULT_SEED, SEEDS, Estimate
from reviewapp.analysis.agreement import (
    RerunAgreement,
    ReviewerAgreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    rerun_agreement,
    reviewer_agreement,
    spearman,
    weighted_kappa,
)
from reviewapp.analysis.elements import KeyElements, content_words, key_element_analysis, named_elements
from reviewapp.analysis.hints import HintCorrelation, hint_correlation
from reviewapp.analysis.inference import (
    Coefficient,
    LogisticFit,
    PermutationTest,
    holm,
    logistic_clustered,
    permutation_test_of_totals,
    permutation_test_within_tasks,
)
from reviewapp.analysis.judges import (
    JudgeAgreement,
    JudgeOutcome,
    OtherCompanyVotes,
    PairAgreement,
    judge_agreement,
    judge_outcome,
    judge_outcome_for,
    other_company_votes,
)
from reviewapp.analysis.originality import (
    DIMENSIONS,
    MatchedPair,
    OriginalityComparison,
    matched_pairs,
    originality_comparison,
    pair_hash,
)
from reviewapp.analysis.ranking import (
    AucEstimate,
    BalancedAccuracy,
    ForecastMeasures,
    PrecisionAtK,
    auc,
    auc_estimate,
    balanced_accuracy,
    expected_precision_at_k,
    forecast_measures,
    top_k_weights,
)
from reviewapp.analysis.reviews import (
    AuthorProfile,
    CriterionMean,
    RevisionGroup,
    RevisionOutcomes,
    criterion_profiles,
    revision_outcomes,
)
from reviewapp.analysis.rules import (
    BestSingleModel,
    ForecastRules,
    RuleEnumeration,
    best_single_model,
    forecast_rules,
    rule_enumeration,
    two_stage_scheme_count,
    voting_rule_count,
)
from reviewapp.analysis.selection import (
    JudgeLeftOut,
    LeaveOneJudgeOut,
    RandomControl,
    SelectionSummary,
    SelectionWithoutCompany,
    TrimmedList,
    leave_one_judge_out,
    random_control,
    selection_summary,
    selection_without_company,
    trim_to_group_length,
)
from reviewapp.analysis.task_selection import TaskSelectionCheck, candidate_key, candidate_order, task_selection_check

__all__ = [
    "AucEstimate",
    "BalancedAccuracy",
    "ForecastMeasures",
    "BestSingleModel",
    "Coefficient",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "DIMENSIONS",
    "AuthorProfile",
    "CriterionMean",
    "Estimate",
    "ForecastRules",
    "HintCorrelation",
    "JudgeAgreement",
    "JudgeLeftOut",
    "JudgeOutcome",
    "KeyElements",
    "LeaveOneJudgeOut",
    "LogisticFit",
    "MatchedPair",
    "OriginalityComparison",
    "OtherCompanyVotes",
    "PairAgreement",
    "PermutationTest",
    "PrecisionAtK",
    "RandomControl",
    "RerunAgreement",
    "ReviewerAgreement",
    "RevisionGroup",
    "RevisionOutcomes",
    "RuleEnumeration",
    "SEEDS",
    "SelectionSummary",
    "SelectionWithoutCompany",
    "TaskSelectionCheck",
    "TrimmedList",
    "auc",
    "auc_estimate",
    "balanced_accuracy",
    "best_single_model",
    "candidate_key",
    "candidate_order",
    "cohen_kappa",
    "content_words",
    "criterion_profiles",
    "expected_precision_at_k",
    "forecast_measures",
    "fleiss_kappa",
    "forecast_rules",
    "hint_correlation",
    "holm",
    "judge_agreement",
    "judge_outcome",
    "judge_outcome_for",
    "key_element_analysis",
    "krippendorff_alpha",
    "leave_one_judge_out",
    "logistic_clustered",
    "matched_pairs",
    "named_elements",
    "originality_comparison",
    "other_company_votes",
    "pair_hash",
    "permutation_test_of_totals",
    "permutation_test_within_tasks",
    "random_control",
    "rerun_agreement",
    "reviewer_agreement",
    "revision_outcomes",
    "rule_enumeration",
    "selection_summary",
    "selection_without_company",
    "spearman",
    "task_selection_check",
    "top_k_weights",
    "trim_to_group_length",
    "two_stage_scheme_count",
    "voting_rule_count",
    "weighted_kappa",
]
