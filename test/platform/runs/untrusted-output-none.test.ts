import { describeUntrustedOutput, untrustedOutputKind } from './untrusted-output.js';

// What a run leaves behind is untrusted, unsandboxed (TOLLGATE_RUN_SANDBOX=none):
// untrusted-output.ts says what is tried.
describeUntrustedOutput(await untrustedOutputKind('none'));
