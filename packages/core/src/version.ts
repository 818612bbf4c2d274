/** This package's version, for the tracer and meter (a test keeps it equal to package.json's). */
export const coreVersion = '0.1.0';
