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

from reviewapp.analysis._resampling import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate
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
from reviewapp.analysis.inference import (
    Coefficient,
    LogisticFit,
    PermutationTest,
    holm,
    logistic_clustered,
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
from reviewapp.analysis.ranking import BalancedAccuracy, PrecisionAtK, auc, balanced_accuracy, expected_precision_at_k
from reviewapp.analysis.reviews import (
    AuthorProfile,
    CriterionMean,
    RevisionGroup,
    RevisionOutcomes,
    criterion_profiles,
    revision_outcomes,
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

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "AuthorProfile",
    "BalancedAccuracy",
    "Coefficient",
    "CriterionMean",
    "Estimate",
    "JudgeAgreement",
    "JudgeLeftOut",
    "JudgeOutcome",
    "LeaveOneJudgeOut",
    "LogisticFit",
    "OtherCompanyVotes",
    "PairAgreement",
    "PermutationTest",
    "PrecisionAtK",
    "RandomControl",
    "RerunAgreement",
    "ReviewerAgreement",
    "RevisionGroup",
    "RevisionOutcomes",
    "SelectionSummary",
    "SelectionWithoutCompany",
    "TrimmedList",
    "auc",
    "balanced_accuracy",
    "cohen_kappa",
    "criterion_profiles",
    "expected_precision_at_k",
    "fleiss_kappa",
    "holm",
    "judge_agreement",
    "judge_outcome",
    "judge_outcome_for",
    "krippendorff_alpha",
    "leave_one_judge_out",
    "logistic_clustered",
    "other_company_votes",
    "permutation_test_within_tasks",
    "random_control",
    "rerun_agreement",
    "reviewer_agreement",
    "revision_outcomes",
    "selection_summary",
    "selection_without_company",
    "spearman",
    "trim_to_group_length",
    "weighted_kappa",
]
