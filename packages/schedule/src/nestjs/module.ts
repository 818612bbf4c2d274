import { createLockClient, type LockClient, type LockClientConfig } from '@deadbolt/core';
import { type DynamicModule, Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { holdClient } from './client-holder.js';

/** Nest's injection token for the LockClient (Nest cannot use core's tsyringe token). */
export const LOCK_CLIENT = Symbol.for('@deadbolt/schedule:LockClient');

/** `@InjectLockClient() locks: LockClient` in a constructor. */
export const InjectLockClient = (): ParameterDecorator & PropertyDecorator => Inject(LOCK_CLIENT);

/** A LockClient the module creates (and closes on shutdown), or one the application owns. */
export type DeadboltScheduleOptions = LockClientConfig | { readonly client: LockClient };

const ownedToken = Symbol('@deadbolt/schedule:owned');

/** Closes the client the module created when the application shuts down. */
class ClientLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(LOCK_CLIENT) private readonly client: LockClient,
    @Inject(ownedToken) private readonly owned: boolean,
  ) {
    holdClient(client);
  }

  async onApplicationShutdown(): Promise<void> {
    holdClient(undefined);
    if (this.owned) await this.client.close();
  }
}

/**
 * Provides a LockClient under LOCK_CLIENT to the whole application, for `@RunOnce` and for
 * injection: `DeadboltScheduleModule.forRoot({ url: 'redis://...' })` or `forRoot({ client })`.
 * A client it creates is closed on shutdown (`app.enableShutdownHooks()` or `app.close()`).
 */
@Global()
@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: Nest modules are classes with a static forRoot
export class DeadboltScheduleModule {
  static forRoot(options: DeadboltScheduleOptions): DynamicModule {
    const given = typeof options === 'object' && 'client' in options ? options.client : undefined;
    return {
      module: DeadboltScheduleModule,
      providers: [
        { provide: LOCK_CLIENT, useFactory: () => given ?? createLockClient(options as LockClientConfig) },
        { provide: ownedToken, useValue: given === undefined },
        ClientLifecycle,
      ],
      exports: [LOCK_CLIENT],
    };
  }
}
