-- Costs: operators' rate cards (price per node-hour and GPU-hour of a hardware profile, in a
-- currency, over a time range), conversion rates per currency pair and date, and organizations' billing currency.
CREATE TABLE "billing_currencies" (
	"org_id" text PRIMARY KEY NOT NULL,
	"currency" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversion_rates" (
	"base_currency" text NOT NULL,
	"quote_currency" text NOT NULL,
	"effective_on" date NOT NULL,
	"rate" numeric(30, 12) NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "conversion_rates_pkey" PRIMARY KEY("base_currency","quote_currency","effective_on"),
	CONSTRAINT "conversion_rates_codes_check" CHECK ("conversion_rates"."base_currency" ~ '^[A-Z]{3}$' and "conversion_rates"."quote_currency" ~ '^[A-Z]{3}$' and "conversion_rates"."base_currency" <> "conversion_rates"."quote_currency"),
	CONSTRAINT "conversion_rates_rate_check" CHECK ("conversion_rates"."rate" > 0)
);
--> statement-breakpoint
CREATE TABLE "rate_cards" (
	"id" text PRIMARY KEY NOT NULL,
	"profile" text NOT NULL,
	"currency" text NOT NULL,
	"node_hour_price" numeric(30, 12) NOT NULL,
	"gpu_hour_price" numeric(30, 12) NOT NULL,
	"effective_from" timestamp with time zone NOT NULL,
	"effective_to" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "rate_cards_currency_check" CHECK ("rate_cards"."currency" ~ '^[A-Z]{3}$'),
	CONSTRAINT "rate_cards_prices_check" CHECK ("rate_cards"."node_hour_price" >= 0 and "rate_cards"."gpu_hour_price" >= 0),
	CONSTRAINT "rate_cards_range_check" CHECK ("rate_cards"."effective_to" is null or "rate_cards"."effective_to" > "rate_cards"."effective_from")
);
--> statement-breakpoint
ALTER TABLE "billing_currencies" ADD CONSTRAINT "billing_currencies_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rate_cards" ADD CONSTRAINT "rate_cards_profile_hardware_profiles_name_fk" FOREIGN KEY ("profile") REFERENCES "public"."hardware_profiles"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "rate_cards_profile_idx" ON "rate_cards" USING btree ("profile","effective_from");