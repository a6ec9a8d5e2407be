//! Spec Part 2: the models keep every field the API sends.

use business_records::{Company, Contact};
use business_records_reference_server::ReferenceServer;

use crate::support;

crate::cases! {
    ServerControl:
        companies_and_contacts_decode_with_unknown_fields_kept;
}

async fn companies_and_contacts_decode_with_unknown_fields_kept() {
    let server = ReferenceServer::builder().companies(30).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let companies: Vec<Company> =
        client.companies().sort("createdAt").stream().try_collect().await.expect("companies");
    let dataset = server.dataset();
    assert_eq!(companies.len(), dataset.companies().len(), "every company is listed");
    for company in &companies {
        let expected = dataset.company(&company.id).expect("served company is in the dataset");
        assert_eq!(Some(company.name.as_str()), expected.str("name"));
        assert_eq!(company.status.as_ref().map(|s| s.as_str()), expected.str("status"));
        let rfc3339 = |d: Option<chrono::DateTime<chrono::Utc>>| {
            d.map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        };
        assert_eq!(rfc3339(company.created_at).as_deref(), expected.str("createdAt"));
        assert_eq!(rfc3339(company.updated_at).as_deref(), expected.str("updatedAt"));
        assert!(company.fallbacks().is_empty());
        assert_eq!(company.extra["industry"], expected["industry"]);
        assert_eq!(company.extra["employeeCount"], expected["employeeCount"]);
        assert_eq!(company.extra["country"], expected["country"]);
    }
    let contacts: Vec<Contact> = client.contacts().stream().try_collect().await.expect("contacts");
    assert_eq!(contacts.len(), server.dataset().contacts().len());
    for (contact, expected) in contacts.iter().zip(server.dataset().contacts()) {
        assert_eq!(contact.id.as_deref(), Some(expected.id()));
        assert_eq!(contact.company_id.as_deref(), expected.str("companyId"));
        assert_eq!(contact.field_str("email"), expected.str("email"));
        assert_eq!(contact.field_str("title"), expected.str("title"));
    }
}
