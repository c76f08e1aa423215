package drivertest

// guarantees lists the design's guarantees and their proofs. A test
// moved here from a package's own tests keeps its name (TestXxx), so a
// failure points at the proof it always was; a test written for the
// suite has a plain name.
var guarantees = []guarantee{
	{"append-read", []test{
		{"TestAppendReadBack", testAppendReadBack},
		{"TestTenantsIsolated", testTenantsIsolated},
		{"TestEventByID", testEventByID},
		{"TestReadAllFilters", testReadAllFilters},
		{"ReadPages", testReadPages},
	}},
	{"expected-version", []test{
		{"TestAppendExpectedVersions", testAppendExpectedVersions},
		{"TestConcurrentSameExpectedVersion", testConcurrentSameExpectedVersion},
	}},
	{"idempotent-ids", []test{
		{"TestIdempotentRetry", testIdempotentRetry},
		{"TestIDReuse", testIDReuse},
	}},
	{"positions", []test{
		{"TestGroupCommitPositionsConsecutive", testGroupCommitPositionsConsecutive},
	}},
	{"transactions", []test{
		{"TestConcurrentUpdatesIsolated", testConcurrentUpdatesIsolated},
		{"TestNestedUndoesOnlyItsScope", testNestedUndoesOnlyItsScope},
		{"TestNestedCommitsWithItsTransaction", testNestedCommitsWithItsTransaction},
		{"TestNestedInGroupCommit", testNestedInGroupCommit},
		{"TestNestedOutsideUpdate", testNestedOutsideUpdate},
		{"TestNestedDeep", testNestedDeep},
	}},
	{"outbox", []test{
		{"OutboxInTheAppendsTransaction", testOutboxInTheAppendsTransaction},
		{"TestOutboxReadMarkAndFence", testOutboxReadMarkAndFence},
		{"TestOutboxFailuresHoldTheirStream", testOutboxFailuresHoldTheirStream},
		{"TestDeadLettersParkRetryDiscard", testDeadLettersParkRetryDiscard},
		{"TestRetryAllDeadLetters", testRetryAllDeadLetters},
		{"RelayDeliversEveryEventOnceInStreamOrder", testRelayDeliversEveryEventOnceInStreamOrder},
	}},
	{"fenced-leases", []test{
		{"TestLeaseFencing", testLeaseFencing},
		{"TestLeaseOneOwnerAmongMany", testLeaseOneOwnerAmongMany},
	}},
	{"checkpoints", []test{
		{"CheckpointsCommitWithTheirTransaction", testCheckpointsCommitWithTheirTransaction},
	}},
	{"inbox", []test{
		{"TestOrderScenario", testOrderScenario},
		{"TestTransientApplyErrorChangesNothing", testTransientApplyErrorChangesNothing},
	}},
	{"deferral", []test{
		{"TestDeferralSweep", testDeferralSweep},
		{"TestStartAtFirstSeen", testStartAtFirstSeen},
	}},
	{"quarantine", []test{
		{"TestUninterpretableQuarantinedAtOnce", testUninterpretableQuarantinedAtOnce},
	}},
	{"effects", []test{
		{"TestEffectAtMostOnce", testEffectAtMostOnce},
		{"TestEffectUnknownIsReconciledNotRetried", testEffectUnknownIsReconciledNotRetried},
		{"TestEffectReconcileStuckExecuting", testEffectReconcileStuckExecuting},
		{"TestEffectApproveExactArguments", testEffectApproveExactArguments},
		{"TestEffectChangedArgumentsRefused", testEffectChangedArgumentsRefused},
		{"TestEffectConcurrentApprovals", testEffectConcurrentApprovals},
		{"TestEffectRejectThenRun", testEffectRejectThenRun},
		{"TestEffectOtherTenantNotFound", testEffectOtherTenantNotFound},
		{"TestEffectKinds", testEffectKinds},
		{"TestEffectApprovalExpires", testEffectApprovalExpires},
		{"TestEffectResumeApprovedAfterCrash", testEffectResumeApprovedAfterCrash},
		{"TestEffectInputRefused", testEffectInputRefused},
		{"TestEffectDoctorFindings", testEffectDoctorFindings},
		{"TestEffectApprovedRunsOnceUnderConcurrency", testEffectApprovedRunsOnceUnderConcurrency},
	}},
	{"rebuild-swap", []test{
		{"RebuildSwapsAtTheWatermark", testRebuildSwapsAtTheWatermark},
	}},
	{"doctor", []test{
		{"TestDiagnoseFreshStore", testDiagnoseFreshStore},
		{"TestDiagnoseCleanLargeStore", testDiagnoseCleanLargeStore},
	}},
	{"stream-lifecycle", []test{
		{"TestSoftDelete", testSoftDelete},
		{"TestSoftDeleteThenAny", testSoftDeleteThenAny},
		{"TestHardDelete", testHardDelete},
		{"TestTruncate", testTruncate},
		{"TestEventCounts", testEventCounts},
		{"TestLifecycleBadInputChangesNothing", testLifecycleBadInputChangesNothing},
		{"TestStreamsListsNoDeletedStream", testStreamsListsNoDeletedStream},
	}},
	{"removed-ranges", []test{
		{"TestScavengeRemovesWhatLifecycleAllows", testScavengeRemovesWhatLifecycleAllows},
		{"TestScavengeHoldsBackUnpublishedAndUnpassed", testScavengeHoldsBackUnpublishedAndUnpassed},
		{"TestScavengeRemovedIDIsDuplicate", testScavengeRemovedIDIsDuplicate},
		{"TestScavengePositionsNeverReusedAfterRestart", testScavengePositionsNeverReusedAfterRestart},
	}},
	{"retention", []test{
		{"TestRetentionPolicies", testRetentionPolicies},
		{"TestRetentionRefusesBadPolicies", testRetentionRefusesBadPolicies},
		{"TestRetentionMaxCountTrimsAndLongestPrefixWins", testRetentionMaxCountTrimsAndLongestPrefixWins},
		{"TestRetentionMaxAgeKeepsTheNewestEvent", testRetentionMaxAgeKeepsTheNewestEvent},
	}},
	{"data-keys", []test{
		{"TestErasureRetryComparesPlaintext", testErasureRetryComparesPlaintext},
		{"TestErasureDataLimitIsOnPlaintext", testErasureDataLimitIsOnPlaintext},
		{"TestErasureRefusesStoreExtensions", testErasureRefusesStoreExtensions},
		{"TestForgetNeedsNoMasterKeyAndIsSeenByAnotherStore", testForgetNeedsNoMasterKeyAndIsSeenByAnotherStore},
		{"TestOwnStreamsAreTheStores", testOwnStreamsAreTheStores},
		{"TestForgetErasesErrorTexts", testForgetErasesErrorTexts},
		{"TestOneMasterKeyPerStore", testOneMasterKeyPerStore},
		{"TestForgetBeatsACachedKey", testForgetBeatsACachedKey},
		{"TestForgetDropsSnapshotsAfterScavenge", testForgetDropsSnapshotsAfterScavenge},
	}},
}
