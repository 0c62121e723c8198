import { describeUntrustedOutput, untrustedOutputKind } from './untrusted-output.js';

// What a run leaves behind is untrusted, in the docker sandbox: untrusted-output.ts says what is
// tried.
describeUntrustedOutput(await untrustedOutputKind('docker'));
