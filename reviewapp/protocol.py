"""The human review form of the protocol (docs/protocol.md#blinded-review-form): scales, anchors and the order they are
asked in.

Every point of every scale carries a written anchor shown beside it. "Can't judge" is a value of its own
(CANT_JUDGE), stored as that literal, never as a number and never as missing.
"""

CANT_JUDGE = "cant_judge"
CANT_JUDGE_LABEL = "Can't judge"

OVERALL_SCALE = [
    (1, "Not worth pursuing", "The proposal should not receive research effort."),
    (2, "Low priority", "Worth pursuing only if resources are left over."),
    (3, "Worth pursuing", "A reasonable use of research effort, not urgent."),
    (4, "High priority", "Should be pursued soon; clearly above the typical proposal."),
    (5, "Top priority", "Among the first things to pursue with the resources available."),
]

RECOMMENDATIONS = [
    ("prioritize", "Prioritize", "Pursue as written, ahead of other work."),
    ("revise", "Revise", "Promising, but needs changes before it is pursued."),
    ("defer", "Defer", "Not now; revisit when the data or context changes."),
    ("reject", "Reject", "Should not be pursued."),
]

# (field, label, question, anchors for 1..4)
CRITERIA = [
    (
        "importance",
        "Importance",
        "If the hypothesis holds, how much would it matter for the field or for patients?",
        [
            "Trivial: the answer would change nothing anyone does or believes.",
            "Minor: of interest to a narrow group; little consequence beyond it.",
            "Substantial: would change how a recognised problem is understood or approached.",
            "Major: would change practice or open a new line of work across the field.",
        ],
    ),
    (
        "advance_over_known_work",
        "Advance over known work",
        "How far does it go beyond what is already reported?",
        [
            "None: restates a known finding or an obvious consequence of one.",
            "Incremental: a small extension or a new setting for a known result.",
            "Clear: a specific claim not yet tested, building on known mechanisms.",
            "Strong: a new causal link or approach that known work does not anticipate.",
        ],
    ),
    (
        "plausible_evidence_bounded",
        "Plausible and evidence-bounded claims",
        "Are the claims plausible and no stronger than the cited evidence allows?",
        [
            "Implausible or contradicted by well-established evidence; claims far exceed support.",
            "Doubtful: key steps lack support or claims overreach the evidence.",
            "Plausible: mostly supported, with minor overstatement.",
            "Well grounded: every step is plausible and claims stay within the evidence.",
        ],
    ),
    (
        "data_fit",
        "Data fit",
        "Can the named data actually answer the question?",
        [
            "No: the data cannot measure the exposure, the outcome or both.",
            "Weak: answers only a proxy of the question, or with severe limitations.",
            "Adequate: answers the question with limitations that can be stated.",
            "Strong: the data measure what is needed at the resolution needed.",
        ],
    ),
    (
        "alternative_explanations",
        "Alternative explanations",
        "Are confounders and rival explanations identified and addressed?",
        [
            "Ignored: obvious alternatives are not mentioned.",
            "Named only: alternatives are listed but the design cannot separate them.",
            "Mostly addressed: the main alternatives are handled by the design.",
            "Fully addressed: the design distinguishes the hypothesis from its serious rivals.",
        ],
    ),
    (
        "informative_results",
        "Informative results",
        "Would every plausible outcome of the investigation teach something?",
        [
            "Uninformative: no outcome would change belief in the hypothesis.",
            "One-sided: only a positive result would be informative.",
            "Informative: most outcomes would shift belief, though some would be ambiguous.",
            "Decisive: both a positive and a negative result would be clearly interpretable.",
        ],
    ),
]
CRITERION_FIELDS = [field for field, *_ in CRITERIA]
CRITERION_VALUES = ["1", "2", "3", "4", CANT_JUDGE]

FLAW_VERDICTS = [
    ("absent", "Absent", "No consequential design flaw."),
    ("fixable", "Fixable", "A consequential flaw that a revision of the plan can repair."),
    ("fatal", "Fatal", "A flaw that invalidates the investigation as proposed."),
    (CANT_JUDGE, CANT_JUDGE_LABEL, "Evidence or expertise is insufficient to judge the design."),
]

FLAW_CHECKLIST = [
    ("confounding", "Uncontrolled confounding"),
    ("selection_bias", "Selection or survivorship bias"),
    ("reverse_causation", "Reverse causation"),
    ("measurement", "Exposure or outcome poorly measured"),
    ("power", "Insufficient sample size or power"),
    ("data_unavailable", "Required data unavailable or inaccessible"),
    ("multiple_testing", "Multiple testing or analytic flexibility"),
    ("not_falsifiable", "Claim cannot be falsified as stated"),
    ("other", "Other"),
]
FLAW_CHECKLIST_KEYS = [key for key, _ in FLAW_CHECKLIST]

# A review's answers to the form, as the review records them (fields of the same names).
ANSWER_FIELDS = (
    "overall",
    "recommendation",
    *CRITERION_FIELDS,
    "flaw_verdict",
    "flaw_checklist",
    "main_flaw",
    "comments",
)
