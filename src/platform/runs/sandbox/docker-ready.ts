import type Docker from 'dockerode';

/**
 * Whether the engine answers and holds the image: `null` when both, else why
 * not (a sentence). Bounded to a few seconds: an engine that hangs is absent.
 *
 * @example
 * const why = await dockerReady(docker, 'tollgate/runner:latest');
 */
export async function dockerReady(docker: Docker, image: string, where: string): Promise<string | null> {
  const within = <T>(promise: Promise<T>) =>
    Promise.race([
      promise,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5000).unref()),
    ]);
  try {
    await within(docker.ping());
  } catch (error) {
    return `the Docker engine at ${where} does not answer (${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'})`;
  }
  try {
    await within(docker.getImage(image).inspect());
    return null;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404)
      return `the runner image ${image} is not on the Docker engine at ${where} (build it from compose/runner.Dockerfile, or set TOLLGATE_RUN_IMAGE)`;
    return `the Docker engine at ${where} did not answer about ${image} (${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'})`;
  }
}
