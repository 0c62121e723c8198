import { describeUntrustedOutput, untrustedOutputKind } from './untrusted-output.js';

// What a run leaves behind is untrusted, in the bubblewrap sandbox: untrusted-output.ts says what
// is tried.
describeUntrustedOutput(await untrustedOutputKind('bubblewrap'));
